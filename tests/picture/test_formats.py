"""The text, JSON, Graphviz and HTML forms of a network's loops, and ``render`` choosing among them.

Graphviz source is checked by pydot's parser (a pure-Python reading of the DOT grammar); the
HTML by Python's own HTML parser.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pydot
import pytest

from loopc.fingerprint import ConditionalInfo, IteratorInfo, LoopInfo, NetworkInfo, OutputInfo, RecurrenceInfo
from loopc.picture import FORMATS, render
from loopc.picture.dot import dot_source
from loopc.picture.html import html_page
from loopc.picture.json import json_document
from loopc.picture.labels import clean
from loopc.picture.svg import svg_picture
from loopc.picture.text import text_summary
from tests.picture.samples import NASTY, SAMPLES, awkward_info, sample_info, tree

CRITICAL_RED = "#c62828"


def hand_loop() -> NetworkInfo:
    """An RNN-like loop with an inner while loop and a conditional, written out by hand."""
    inner = LoopInfo("inner", ["kWHILE"], None, [], [RecurrenceInfo("inner/i", "zero", "inner/inc", [])],
                     [OutputInfo("inner/last", "kLAST_VALUE")], 3, 0, 0, ["inner/inc"])
    outer = LoopInfo(
        "outer", ["kCOUNT"], 6, [IteratorInfo("outer/x", 1, True)],
        [RecurrenceInfo("outer/h", "h0", "outer/tanh", [2, -1])], [OutputInfo("outer/ys", "kCONCATENATE", 0)],
        12, 2, None, ["outer/mm", "outer/add", "outer/tanh"], [inner, ConditionalInfo("choose", 3)])
    return NetworkInfo(40, [outer])


# -- text ----------------------------------------------------------------------------------------

def test_text_lists_each_part_of_a_loop() -> None:
    lines = text_summary(hand_loop(), "model.onnx").splitlines()
    assert lines[0] == "model.onnx: 40 layers, 2 loops, 1 conditional"
    assert lines[1] == "loop outer: kCOUNT = 6"
    for expected in ["  per iteration: 12 layers, 2 matmuls, ? MACs", "    x: axis 1 reverse",
                     "    h: h0 → tanh [2, ?]", "    ys: kCONCATENATE axis 0",
                     "  critical path (3 steps): outer/mm → outer/add → outer/tanh",
                     "  loop inner: kWHILE", "      i: zero → inc (scalar)", "  if choose: 3 layers in its branches"]:
        assert expected in lines, expected
    # nested blocks come after their parent's own lines, indented once more
    assert lines.index("  loop inner: kWHILE") > lines.index("    ys: kCONCATENATE axis 0")


def test_every_picture_counts_a_loops_convolutions() -> None:
    """A loop with convolutions lists them beside its matmuls; its MACs are all of theirs (a loop without any
    keeps the ``N matmuls`` form above)."""
    step = LoopInfo("denoise", ["kCOUNT"], 10, [], [RecurrenceInfo("denoise/x", "noise", "denoise/add", [1, 3, 8, 8])],
                    [OutputInfo("denoise/last", "kLAST_VALUE")], 18, 2, 6_070_272, ["denoise/conv", "denoise/add"],
                    convolutions_per_iteration=14)
    info = NetworkInfo(30, [step])
    work = "18 layers, 2 matmuls, 14 convolutions, 6,070,272 MACs"
    assert f"  per iteration: {work}" in text_summary(info).splitlines()
    for fmt in ("dot", "svg", "html"):
        assert work in render(info, fmt, "t"), fmt
    data = json.loads(json_document(info, "t"))
    assert data["loops"][0]["convolutions_per_iteration"] == 14 and NetworkInfo.from_dict(data) == info


def test_a_fingerprint_from_before_convolutions_were_counted_reads_as_none() -> None:
    old = {"layers": 5, "loops": [{"name": "L", "trip_limits": ["kCOUNT"], "layers_per_iteration": 3,
                                   "matmuls_per_iteration": 1, "macs_per_iteration": 16}]}
    (loop,) = NetworkInfo.from_dict(old).loops
    assert isinstance(loop, LoopInfo) and loop.convolutions_per_iteration == 0
    assert "3 layers, 1 matmul, 16 MACs" in text_summary(NetworkInfo.from_dict(old))


@pytest.mark.parametrize("sample", SAMPLES)
def test_text_indents_nested_loops_and_conditionals(sample: str) -> None:
    info = sample_info(sample)
    lines = text_summary(info).splitlines()

    def depth(nodes: list, level: int = 0) -> list[tuple[str, int]]:
        found = []
        for node in nodes:
            found.append((f"{node.kind} {node.name}", level))
            found += depth(node.children, level + 1)
        return found

    heads = [(line.strip().split(": ")[0], (len(line) - len(line.lstrip())) // 2) for line in lines
             if line.lstrip().startswith(("loop ", "if "))]
    assert heads == depth(info.loops)


def test_text_shortens_a_long_critical_path() -> None:
    info = awkward_info(path_length=60)
    line = next(line for line in text_summary(info).splitlines() if "critical path (60 steps)" in line)
    steps = line.split(": ", 1)[1].split(" → ")
    path = info.loops[0].critical_path  # type: ignore[union-attr]
    (cut,) = [k for k, step in enumerate(steps) if "more" in step]
    assert steps[:cut] == path[:cut] and steps[cut + 1:] == path[len(path) - (len(steps) - cut - 1):]
    assert steps[cut] == f"… {60 - len(steps) + 1} more …"


def test_control_characters_never_reach_the_terminal() -> None:
    info = NetworkInfo(1, [ConditionalInfo("evil\x1b[2J\x07name\u2028", 1)])
    text = text_summary(info, "t\x1b]0;x\x07")
    assert "\x1b" not in text and "\x07" not in text and "evil\ufffd[2J\ufffdname" in text
    assert clean("a\x00b\ud800c\ufffe") == "a\ufffdb\ufffdc\ufffd"


# -- JSON ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("sample", SAMPLES)
def test_json_is_the_data_model_with_a_title(sample: str) -> None:
    info = sample_info(sample)
    data = json.loads(json_document(info, sample))
    assert list(data) == ["title", "layers", "loops"] and data["title"] == sample
    assert NetworkInfo.from_dict(data) == info


# -- Graphviz ------------------------------------------------------------------------------------

def parse_dot(source: str) -> pydot.Dot:
    graphs = pydot.graph_from_dot_data(source)
    assert graphs is not None and len(graphs) == 1, "not one well-formed DOT graph"
    return graphs[0]


def unquote(text: str) -> str:
    """A DOT quoted label's text: ``\\"`` is a quote, ``\\\\`` a backslash, ``\\n`` a line break."""
    assert text.startswith('"') and text.endswith('"'), text
    out, k, body = [], 0, text[1:-1]
    while k < len(body):
        if body[k] == "\\" and k + 1 < len(body) and body[k + 1] in '"\\n':
            out.append("\n" if body[k + 1] == "n" else body[k + 1])
            k += 2
        else:
            out.append(body[k])
            k += 1
    return "".join(out)


def test_the_dot_parser_refuses_broken_source() -> None:
    """The check below can fail: pydot refuses an unterminated string and an unbalanced brace."""
    for broken in ['digraph { a [label="x] }', "digraph { subgraph cluster_1 { a }", 'digraph { a -> }']:
        with pytest.raises(AssertionError):
            parse_dot(broken)


def clusters(graph: pydot.Graph, parent: str | None = None) -> list[tuple[str, str | None, pydot.Subgraph]]:
    """(first line of the cluster's label, parent's first line, the subgraph), outer first."""
    found = []
    for sub in graph.get_subgraphs():
        assert sub.get_name().startswith("cluster")
        head = unquote(sub.get("label")).split("\n")[0]
        found.append((head, parent, sub))
        found += clusters(sub, head)
    return found


def critical_chain(sub: pydot.Subgraph) -> list[str]:
    """The labels of the red nodes directly in ``sub``, following its red edges."""
    red = {node.get_name(): unquote(node.get("label")) for node in sub.get_nodes()
           if node.get("color") == f'"{CRITICAL_RED}"'}
    following = {e.get_source(): e.get_destination() for e in sub.get_edges()
                 if e.get_source() in red and e.get_destination() in red}
    if not red:
        return []
    start = next(iter(set(red) - set(following.values())))
    chain = [start]
    while chain[-1] in following:
        chain.append(following[chain[-1]])
    return [red[name] for name in chain]


@pytest.mark.parametrize("sample", SAMPLES)
def test_dot_clusters_nest_and_chain_the_critical_path(sample: str) -> None:
    info = sample_info(sample)
    graph = parse_dot(dot_source(info, sample))
    found = clusters(graph)
    assert [(head, parent) for head, parent, _ in found] == [
        (f"{kind} {name}", f"{pk} {parent}" if parent else None)
        for (kind, name, parent), pk in zip(tree(info.loops), _parent_kinds(info))]
    for loop, (_, _, sub) in zip(info.walk_loops(), [c for c in found if c[0].startswith("loop ")]):
        assert critical_chain(sub) == loop.critical_path


def _parent_kinds(info: NetworkInfo) -> list[str | None]:
    kinds = {name: kind for kind, name, _ in tree(info.loops)}
    return [kinds.get(parent) if parent else None for _, _, parent in tree(info.loops)]


def test_dot_quotes_awkward_names() -> None:
    info = awkward_info(path_length=5)
    graph = parse_dot(dot_source(info, NASTY))
    (defaults,) = graph.get_graph_defaults()
    assert unquote(defaults["label"]).startswith(NASTY)
    heads = [head for head, _, _ in clusters(graph)]
    assert heads == [f"{kind} {name}" for kind, name, _ in tree(info.loops)]


# -- HTML ----------------------------------------------------------------------------------------

class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.text: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self.stack:
            self.text.setdefault(self.stack[-1], []).append(data)


@pytest.mark.parametrize("sample", SAMPLES)
def test_html_is_one_self_contained_page(sample: str) -> None:
    info = sample_info(sample)
    source = html_page(info, sample)
    page = _Page()
    page.feed(source)
    tags = [tag for tag, _ in page.tags]
    assert source.startswith("<!DOCTYPE html>") and tags.count("svg") == 1 and "script" not in tags
    assert not [attrs for _, attrs in page.tags if {"src", "href", "srcset"} & set(attrs)]
    policy = [a["content"] for tag, a in page.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert policy and "default-src 'none'" in policy[0]
    assert page.text["h1"] == [sample]
    assert page.text["h2"] == [f"{kind} {name}" for kind, name, _ in tree(info.loops)]
    svg = source[source.index("<svg"):source.index("</svg>") + 6]
    assert svg == svg_picture(info, sample, heading=False)


def test_html_escapes_names() -> None:
    info = awkward_info(path_length=5)
    page = _Page()
    page.feed(html_page(info, NASTY))
    assert page.text["h1"] == [NASTY] and page.text["title"][0] == NASTY
    assert f"loop inner {NASTY}" in page.text["h2"]


# -- dispatch ------------------------------------------------------------------------------------

def test_render_picks_the_format() -> None:
    info = hand_loop()
    made = {"text": text_summary, "json": json_document, "dot": dot_source, "svg": svg_picture, "html": html_page}
    assert set(FORMATS) == set(made)
    for fmt, function in made.items():
        assert render(info, fmt, "t") == function(info, "t")
    with pytest.raises(ValueError, match="png"):
        render(info, "png", "t")
