"""Bad OpenVINO IR input through the real CLI: one line naming the layer or file, exit 1, nothing written, fast.

Each case starts from a small Loop model that OpenVINO itself writes (``openvino.save_model``) and breaks
one thing in its XML or .bin: malformed XML, bad port maps and back edges, weights out of bounds.
Where OpenVINO accepts the input (a back edge into a Result, duplicate port ids, a DTD), loopc must not.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET  # noqa: S405  (parses only XML that OpenVINO wrote in this test)
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.frontend.openvino.reader import MAX_DEPTH

#: A failing case must answer well within this (each takes a fraction of a second).
SECONDS = 10.0
#: Most a failing case may add to the process's peak memory.
RSS_BYTES = 200 * 2**20
SENTINEL = b"an engine built earlier"
REPO = Path(__file__).resolve().parents[3]


@dataclass
class IRFiles:
    """One IR as bytes: ``bin`` None means no .bin beside the .xml."""

    xml: bytes
    bin: bytes | None

    def write(self, folder: Path, stem: str = "model") -> Path:
        xml = folder / f"{stem}.xml"
        xml.write_bytes(self.xml)
        if self.bin is not None:
            (folder / f"{stem}.bin").write_bytes(self.bin)
        return xml


def loop_model() -> ov.Model:
    """``y = y0; for i in range(3): y = y + x * i`` with every port kind: trip count, condition, current_iteration,
    an invariant, a back edge, a last value and a concatenated output."""
    x = ops.parameter([1, 2], np.float32, name="x")
    y0 = ops.parameter([1, 2], np.float32, name="y0")
    i = ops.parameter([], np.int64, name="i")
    bx = ops.parameter([1, 2], np.float32, name="bx")
    by = ops.parameter([1, 2], np.float32, name="by")
    y_next = ops.add(by, ops.multiply(bx, ops.convert(i, "f32", name="to_f32"), name="scaled"), name="y_next")
    r_cond = ops.result(ops.constant(True, name="keep_going"), name="r_cond")
    r_y = ops.result(y_next, name="r_y")
    r_cat = ops.result(ops.add(y_next, ops.constant(np.float32(1), name="one"), name="y_plus_one"), name="r_cat")
    loop = ops.loop(ops.constant(np.int64(3), name="trips"), ops.constant(True, name="go"))
    loop.set_friendly_name("loop")
    loop.set_function(ov.Model([r_cond, r_y, r_cat], [i, bx, by]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, x.output(0))
    loop.set_merged_input(by, y0.output(0), r_y.output(0))
    outs = [loop.get_iter_value(r_y.output(0), -1), loop.get_concatenated_slices(r_cat.output(0), 0, 1, 1, -1, 0)]
    return ov.Model([ops.result(o, name=f"out{k}") for k, o in enumerate(outs)], [x, y0], "loop")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> IRFiles:
    folder = tmp_path_factory.mktemp("base")
    ov.save_model(loop_model(), str(folder / "loop.xml"), compress_to_fp16=False)
    files = IRFiles((folder / "loop.xml").read_bytes(), (folder / "loop.bin").read_bytes())
    assert run_cli("inspect", str(files.write(folder))).exit_code == 0  # the unbroken model is fine
    return files


# ---------------------------------------------------------------------------------------------- editing


def edited(files: IRFiles, edit: Callable[[ET.Element], None]) -> IRFiles:
    root = ET.fromstring(files.xml)  # noqa: S314  (OpenVINO's own output)
    edit(root)
    return IRFiles(ET.tostring(root), files.bin)


def layer(root: ET.Element, name: str) -> ET.Element:
    found = [e for e in root.iter("layer") if e.get("name") == name]
    assert len(found) == 1, name
    return found[0]


def describe(root: ET.Element, name: str) -> str:
    """How loopc names a layer in errors (``Layer.describe``), from the layer's attributes in the XML."""
    e = layer(root, name)
    return f"layer {e.get('id')} {e.get('name')!r} ({e.get('type')}, {e.get('version')})"


def port_map(root: ET.Element) -> ET.Element:
    return layer(root, "loop").find("port_map")  # type: ignore[return-value]


def entry(root: ET.Element, tag: str, body_layer: str) -> ET.Element:
    """The port_map ``<input>``/``<output>`` that names body layer ``body_layer``."""
    target = layer(root, body_layer).get("id")
    return next(e for e in port_map(root).findall(tag) if e.get("internal_layer_id") == target)


def body(root: ET.Element) -> ET.Element:
    return layer(root, "loop").find("body")  # type: ignore[return-value]


def const_region(root: ET.Element, name: str) -> tuple[int, int]:
    data = layer(root, name).find("data")
    assert data is not None
    return int(data.get("offset", "")), int(data.get("size", ""))


# ---------------------------------------------------------------------------------------------- cases


@dataclass
class Case:
    make: Callable[[IRFiles], IRFiles]
    #: Each must be in the error line (after the layer names are filled in from the base XML).
    expect: Callable[[ET.Element], list[str]]


def set_data(name: str, **attrs: str) -> Callable[[IRFiles], IRFiles]:
    def make(files: IRFiles) -> IRFiles:
        return edited(files, lambda root: layer(root, name).find("data").attrib.update(attrs))  # type: ignore

    return make


def truncated(files: IRFiles) -> IRFiles:
    return IRFiles(files.xml[: len(files.xml) // 2], files.bin)


def with_prolog(prolog: str, name: str = "loop") -> Callable[[IRFiles], IRFiles]:
    """A DOCTYPE before ``<net>``, its entity used as the net's name."""

    def make(files: IRFiles) -> IRFiles:
        text = files.xml.decode()
        start = text.index("<net ")
        net = text[start:].replace('name="loop"', f'name="&{name};"', 1)
        return IRFiles((prolog + "\n" + net).encode(), files.bin)

    return make


BOMB = "<!DOCTYPE net [\n<!ENTITY e0 \"lol\">\n" + "".join(
    f"<!ENTITY e{k} \"{f'&e{k - 1};' * 10}\">\n" for k in range(1, 10)) + "]>"
EXTERNAL_ENTITY = '<!DOCTYPE net [<!ENTITY secret SYSTEM "secret.txt">]>'
EXTERNAL_DTD = '<!DOCTYPE net SYSTEM "http://example.com/openvino.dtd">'


def without_bin(files: IRFiles) -> IRFiles:
    return IRFiles(files.xml, None)


def trip_count(value: int) -> Callable[[IRFiles], IRFiles]:
    """The trips Const's bytes in the .bin rewritten to ``value`` (an i64)."""

    def make(files: IRFiles) -> IRFiles:
        assert files.bin is not None
        offset, size = const_region(ET.fromstring(files.xml), "trips")  # noqa: S314
        assert size == 8
        data = bytearray(files.bin)
        data[offset:offset + 8] = struct.pack("<q", value)
        return IRFiles(files.xml, bytes(data))

    return make


def edit(fn: Callable[[ET.Element], None]) -> Callable[[IRFiles], IRFiles]:
    return lambda files: edited(files, fn)


def back_edge_to(target: str) -> Callable[[ET.Element], None]:
    def fn(root: ET.Element) -> None:
        layer(root, "loop").find("back_edges/edge").set("to-layer", layer(root, target).get("id"))  # type: ignore

    return fn


def drop_condition(root: ET.Element) -> None:
    port_map(root).remove(entry(root, "output", "r_cond"))


def body_cycle(root: ET.Element) -> None:
    """``scaled`` reads ``y_next``, which reads ``scaled``."""
    scaled, y_next = layer(root, "scaled").get("id"), layer(root, "y_next").get("id")
    for e in body(root).find("edges"):  # type: ignore[union-attr]
        if e.get("to-layer") == scaled and e.get("to-port") == "0":
            e.set("from-layer", y_next)
            e.set("from-port", "2")


def top_cycle(root: ET.Element) -> None:
    """The loop's invariant input comes from its own last-value output."""
    loop = layer(root, "loop").get("id")
    for e in root.find("edges"):  # type: ignore[union-attr]
        if e.get("to-layer") == loop and e.get("to-port") == "2":
            e.set("from-layer", loop)
            e.set("from-port", "4")


def duplicate_input_id(root: ET.Element) -> None:
    entry(root, "input", "by").set("external_port_id", entry(root, "input", "bx").get("external_port_id", ""))


def duplicate_output_id(root: ET.Element) -> None:
    entry(root, "output", "r_cat").set("external_port_id", entry(root, "output", "r_y").get("external_port_id", ""))


def port_id_off_position(root: ET.Element) -> None:
    """Input ports 2 and 3 swap ids (edges follow): OpenVINO binds port_map by position, loopc by id."""
    loop = layer(root, "loop")
    ports = loop.findall("input/port")
    ports[2].set("id", "3")
    ports[3].set("id", "2")
    for e in root.find("edges"):  # type: ignore[union-attr]
        if e.get("to-layer") == loop.get("id") and e.get("to-port") in ("2", "3"):
            e.set("to-port", "3" if e.get("to-port") == "2" else "2")


def orphan_parameter(root: ET.Element) -> None:
    """A body Parameter that no port_map entry feeds."""
    layers = body(root).find("layers")
    orphan = ET.SubElement(layers, "layer", id="77", name="orphan", type="Parameter", version="opset1")  # type: ignore
    ET.SubElement(orphan, "data", shape="1,2", element_type="f32")
    port = ET.SubElement(ET.SubElement(orphan, "output"), "port", id="0", precision="FP32")
    for d in ("1", "2"):
        ET.SubElement(port, "dim").text = d


def retype(name: str, op_type: str | None = None, version: str | None = None) -> Callable[[ET.Element], None]:
    def fn(root: ET.Element) -> None:
        e = layer(root, name)
        if op_type is not None:
            e.set("type", op_type)
        if version is not None:
            e.set("version", version)

    return fn


def string_const(root: ET.Element) -> None:
    layer(root, "one").find("data").set("element_type", "string")  # type: ignore[union-attr]


def huge_last_value(root: ET.Element) -> None:
    """Output 0 is y + 1's last value (no back edge carries it: its zero-trip value is zeros), and the inputs are
    10**12 elements: the zeros must be refused, not allocated (once a MemoryError, exit 2)."""
    entry(root, "output", "r_y").set("internal_layer_id", layer(root, "r_cat").get("id", ""))
    for name in ("x", "y0"):
        layer(root, name).find("data").set("shape", "1000000,1000000")  # type: ignore[union-attr]


def deep_nesting(files: IRFiles, depth: int = 10_000) -> IRFiles:
    """``depth`` Loops each inside the previous one's body."""
    open_ = '<layer id="0" name="loop{k}" type="Loop" version="opset5"><body><layers>'
    close = "</layers><edges/></body></layer>"
    text = ('<?xml version="1.0"?>\n<net name="deep" version="11"><layers>'
            + "".join(open_.format(k=k) for k in range(depth)) + close * depth + "</layers><edges/></net>")
    return IRFiles(text.encode(), b"")


#: The innermost layer still open when nesting passes MAX_DEPTH: net > layers > (layer > body > layers)*.
DEEPEST = (MAX_DEPTH - 3) // 3


CASES: dict[str, Case] = {
    "malformed XML": Case(truncated, lambda r: ["model.xml", "malformed XML"]),
    "entity bomb": Case(with_prolog(BOMB, "e9"), lambda r: ["model.xml", "refused", "DTD"]),
    "external entity": Case(with_prolog(EXTERNAL_ENTITY, "secret"), lambda r: ["model.xml", "refused", "DTD"]),
    "external DTD": Case(with_prolog(EXTERNAL_DTD, "x"), lambda r: ["model.xml", "refused", "DTD"]),
    "missing .bin": Case(without_bin, lambda r: [describe(r, "trips"), "model.bin does not exist", "--weights"]),
    "region past the end": Case(set_data("trips", offset="1000"),
                                lambda r: [describe(r, "trips"), "runs past the end", "model.bin"]),
    "size disagrees": Case(set_data("trips", size="4"), lambda r: [describe(r, "trips"), "size 4", "8 bytes"]),
    "larger size": Case(set_data("trips", size="9"), lambda r: [describe(r, "trips"), "size 9", "8 bytes"]),
    "negative offset": Case(set_data("trips", offset="-8"), lambda r: [describe(r, "trips"), "offset -8"]),
    "huge offset": Case(set_data("trips", offset=str(2**64)), lambda r: [describe(r, "trips"), "64-bit"]),
    "string Const": Case(edit(string_const), lambda r: [describe(r, "one"), "string"]),
    "port_map names a missing layer": Case(edit(lambda r: entry(r, "input", "bx").set("internal_layer_id", "99")),
                                           lambda r: [describe(r, "loop"), "body layer 99"]),
    "port_map output names a missing layer": Case(
        edit(lambda r: entry(r, "output", "r_cat").set("internal_layer_id", "99")),
        lambda r: [describe(r, "loop"), "body layer 99"]),
    "back edge into a Result": Case(edit(back_edge_to("r_cat")),
                                    lambda r: [describe(r, "loop"), "silently drop"]),
    "back edge into an op": Case(edit(back_edge_to("scaled")), lambda r: [describe(r, "loop"), "back edge"]),
    "back edge into current_iteration": Case(edit(back_edge_to("i")),
                                             lambda r: [describe(r, "loop"), "current_iteration Parameter"]),
    "no execution_condition": Case(edit(drop_condition), lambda r: [describe(r, "loop"), "execution_condition"]),
    "cycle in the body": Case(edit(body_cycle), lambda r: [describe(r, "scaled"), "cycle"]),
    "cycle in the net": Case(edit(top_cycle), lambda r: [describe(r, "loop"), "cycle"]),
    "duplicate input external_port_id": Case(edit(duplicate_input_id), lambda r: [describe(r, "loop"), "twice"]),
    "duplicate output external_port_id": Case(edit(duplicate_output_id), lambda r: [describe(r, "loop"), "twice"]),
    "external_port_id with no port": Case(edit(lambda r: entry(r, "input", "bx").set("external_port_id", "7")),
                                          lambda r: [describe(r, "loop"), "no input port 7"]),
    "input port id off its position": Case(edit(port_id_off_position),
                                           lambda r: [describe(r, "loop"), "input port 2 has id 3"]),
    "body Parameter without port_map entry": Case(edit(orphan_parameter),
                                                  lambda r: ["layer 77 'orphan' (Parameter", "no port_map input"]),
    "unknown op type": Case(edit(retype("scaled", op_type="Frobnicate")),
                            lambda r: ["'scaled' (Frobnicate, opset1)", "op type 'Frobnicate'"]),
    "opset0": Case(edit(retype("scaled", version="opset0")), lambda r: ["'scaled' (Multiply, opset0)", "opset0"]),
    "opset99": Case(edit(retype("scaled", version="opset99")), lambda r: ["'scaled' (Multiply, opset99)", "opset99"]),
    "experimental": Case(edit(retype("scaled", version="experimental")),
                         lambda r: ["'scaled' (Multiply, experimental)", "'experimental'"]),
    "10k-deep nesting": Case(deep_nesting, lambda r: ["model.xml", f"'loop{DEEPEST}' (Loop, opset5)",
                                                      f"deeper than {MAX_DEPTH}"]),
    "IR version 7": Case(edit(lambda r: r.set("version", "7")), lambda r: ["model.xml", "IR version 7"]),
    "two layers with one id": Case(edit(lambda r: layer(r, "y0").set("id", layer(r, "x").get("id", ""))),
                                   lambda r: ["model.xml", "two layers have id 0", "'x'", "'y0'"]),
    "edge into a missing port": Case(edit(lambda r: r.find("edges/edge").set("to-port", "9")),  # type: ignore
                                     lambda r: [describe(r, "loop"), "no input port 9"]),
    "Parameter of an unknown opset": Case(edit(lambda r: layer(r, "x").set("version", "opset99")),
                                          lambda r: ["'x' (Parameter, opset99)", "'opset99' is not an opset loopc knows"]),
    "Result without a version": Case(edit(lambda r: layer(r, "out0").set("version", "")),
                                     lambda r: ["'out0' (Result", "'' is not an opset loopc knows"]),
    "body Parameter of an unknown type": Case(edit(lambda r: layer(r, "bx").find("data").set("element_type", "x9")),
                                              lambda r: ["'bx' (Parameter", "element type 'x9'"]),
    "body Parameter of an unreadable shape": Case(edit(lambda r: layer(r, "by").find("data").set("shape", "1,two")),
                                                  lambda r: ["'by' (Parameter", "'1,two'"]),
    "id not an integer": Case(edit(lambda r: layer(r, "scaled").set("id", "four")),
                              lambda r: ["model.xml", "name=\"scaled\"", "'four', not an integer"]),
    "huge zero-trip last value": Case(edit(huge_last_value),
                                      lambda r: [describe(r, "loop"), "zero-trip", "shape [1000000, 1000000] (float32)", "above loopc's limit"]),
    "rank-9 input": Case(set_data("x", shape="1,1,1,1,1,1,1,1,2"), lambda r: [describe(r, "x"), "rank 9", "8"]),
    "operands of two element types": Case(set_data("x", element_type="i32"),
                                          lambda r: [describe(r, "scaled"), "int32 and float32", "Convert"]),
    "trip count 2**31": Case(trip_count(2**31), lambda r: [describe(r, "loop"), "trip count 2147483648", "int32"]),
    "trip count 2**32 + 2": Case(trip_count(2**32 + 2), lambda r: [describe(r, "loop"), "4294967298", "int32"]),
}


# ---------------------------------------------------------------------------------------------- running


def run_cli(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


def check_one_line(stderr: str, expect: list[str]) -> str:
    """The one ``loopc: error:`` line (progress lines may come before it); it holds every expected fragment."""
    lines = stderr.splitlines()
    errors = [line for line in lines if line.startswith("loopc: error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    assert all(line.startswith("loopc: ") and line.endswith(" ...") for line in lines[:-1]), stderr
    for fragment in expect:
        assert fragment in errors[0], f"{fragment!r} not in {errors[0]!r}"
    return errors[0]


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name: str, base: IRFiles, tmp_path: Path) -> None:
    """``loopc build``: exit 1, one line naming the layer or file, no engine written, an old one untouched."""
    case = CASES[name]
    xml = case.make(base).write(tmp_path)
    expect = case.expect(ET.fromstring(base.xml))  # noqa: S314
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for existing in (False, True):
        plan = out_dir / "model.plan"
        if existing:
            plan.write_bytes(SENTINEL)
        start = time.monotonic()
        result = run_cli("build", str(xml), "-o", str(plan))
        elapsed = time.monotonic() - start
        assert result.exit_code == 1, (result.exit_code, result.stderr, result.exception)  # type: ignore
        check_one_line(result.stderr, expect)  # type: ignore[attr-defined]
        assert elapsed < SECONDS, f"{elapsed:.1f} s"
        assert sorted(os.listdir(out_dir)) == (["model.plan"] if existing else []), os.listdir(out_dir)
        if existing:
            assert plan.read_bytes() == SENTINEL


@pytest.mark.parametrize("command", ["inspect", "run"])
def test_other_commands(command: str, base: IRFiles, tmp_path: Path) -> None:
    """``inspect`` and ``run`` report a broken IR the same way."""
    xml = CASES["back edge into a Result"].make(base).write(tmp_path)
    result = run_cli(command, str(xml))
    assert result.exit_code == 1, result.stderr  # type: ignore[attr-defined]
    check_one_line(result.stderr, CASES["back edge into a Result"].expect(ET.fromstring(base.xml)))  # type: ignore


def test_weights_flag_missing(base: IRFiles, tmp_path: Path) -> None:
    xml = base.write(tmp_path)
    result = run_cli("build", str(xml), "-o", str(tmp_path / "m.plan"), "--weights", str(tmp_path / "nowhere.bin"))
    assert result.exit_code == 1
    check_one_line(result.stderr, ["--weights", "nowhere.bin", "no such file"])  # type: ignore[attr-defined]
    assert not (tmp_path / "m.plan").exists()


def test_no_bin_needed_without_consts(tmp_path: Path) -> None:
    """An IR without Consts needs no .bin: OpenVINO reads it without one, and so does loopc (same outputs)."""
    x = ops.parameter([2], np.float32, name="x")
    ov.save_model(ov.Model([ops.result(ops.add(x, x), name="y")], [x], "twice"), str(tmp_path / "twice.xml"))
    (tmp_path / "twice.bin").unlink()
    core = ov.Core()
    feed = np.array([1.5, -2.0], np.float32)
    want = core.compile_model(core.read_model(str(tmp_path / "twice.xml")), "CPU")({"x": feed})
    np.savez(tmp_path / "in.npz", x=feed)
    result = run_cli("run", str(tmp_path / "twice.xml"), "-i", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"))
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    got = np.load(tmp_path / "o.npz")
    np.testing.assert_array_equal(got[list(got.keys())[0]], next(iter(want.values())))


# ---------------------------------------------------------------------------------------------- memory

DRIVER = textwrap.dedent("""
    import resource, sys
    from loopc.cli import commands
    from loopc.cli.main import cli
    import loopc.compiler, loopc.frontend.openvino.importer
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        cli(sys.argv[1:], prog_name="loopc")
    except SystemExit as exc:
        code = exc.code
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((after - before) * 1024, code)
""")


@pytest.mark.parametrize("name", ["entity bomb", "10k-deep nesting"])
def test_bounded_memory(name: str, base: IRFiles, tmp_path: Path) -> None:
    """In a fresh process, the refusal adds little to peak memory (ru_maxrss is in KiB on Linux)."""
    if sys.platform != "linux":
        pytest.skip("ru_maxrss units differ off Linux")
    xml = CASES[name].make(base).write(tmp_path)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", DRIVER, "build", str(xml), "-o", str(tmp_path / "m.plan")],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    elapsed = time.monotonic() - start
    grown, code = done.stdout.split()[-2:]
    assert code == "1", done.stderr
    check_one_line(done.stderr, CASES[name].expect(ET.fromstring(base.xml)))  # noqa: S314
    assert int(grown) < RSS_BYTES, f"peak memory grew by {int(grown) >> 20} MiB"
    assert elapsed < 30, f"{elapsed:.1f} s including the interpreter's start"
    assert not (tmp_path / "m.plan").exists()


def test_an_error_about_a_body_layer_carries_the_layers_fields(base: IRFiles, tmp_path: Path) -> None:
    """The message names the layer by id and body, as OpenVINO's IR does; the fields are its name, type and
    version, for callers that read errors without parsing them."""
    from loopc.errors import UnsupportedError
    from loopc.frontend.openvino import import_ir

    files = edited(base, retype("scaled", op_type="Frobnicate"))
    root = ET.fromstring(files.xml)  # noqa: S314
    with pytest.raises(UnsupportedError) as caught:
        import_ir(files.write(tmp_path))
    error = caught.value
    version = layer(root, "scaled").get("version")
    assert (error.node, error.op, error.opset) == ("scaled", "Frobnicate", version)
    assert str(error).startswith(describe(root, "scaled") + " in ")
    assert str(error).endswith(": loopc does not support the op type 'Frobnicate'")
