"""A Resize to a size a loop computes, read by shape-blind readers, is a canvas at the size's bound.

torchvision finds keypoints this way (``heatmaps_to_keypoints`` when exported): per detection, resize the
heatmaps to the roi's size (bicubic), take the ArgMax of each flattened map, turn it into x and y with the
map's width, and read the score there. Every trip resizes to another size, and TensorRT's builder cannot
build a loop layer whose shape changes between trips (``makeScopeNodesContiguous``). But the size has a
bound (the rois are clipped to the image: ``loopc.ir.bounds``), and the readers need only the resized
values at positions inside it: so the resize becomes taps (``passes._resample``) at every position up to
the bound, a canvas of static shape, and each reader is rewritten to read the canvas with the true size
beside it:

the canvas is a padded value of the one padder (:mod:`loopc.passes._padding`), its valid lengths the computed
sizes, and its readers are rewritten by that padder's table: ``Shape`` gives the true size, ``Gather`` at an
index along a resized axis reads the same entry of the canvas (a negative index counts from the true end),
``Slice`` of the other axes slices the canvas, ``ArgMax``/``ArgMin`` of a ``Reshape`` that flattens the
trailing axes takes the canvas with its padding at the op's identity and turns the flat index on the canvas
into the flat index on the true size, and so on.

A reader the table declines leaves the graph as it was. The kept dims of the Resize (its size there is the
input's own dim) stay as they are.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from loopc.ir import Graph, Node
from loopc.ir.bounds import Bounder
from loopc.passes._padding import Pad, Padded, Padder, Refused
from loopc.passes._resample import axis_taps, emitter, resample, resizes_changing_per_trip, size_entry, unsupported
from loopc.passes._util import same_dim, shape_entry_source
from loopc.passes._why import declined
from loopc.passes.manager import PassResult

#: Most positions a canvas may hold along its resized axes together (per slice of the others): 2048 x 2048.
MAX_CANVAS = 1 << 22
RESIZED = "a Resize to a size each trip computes"


class BoundedResize:
    name = "bounded-resize"
    benefit = 60  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = sum(_rewrite(g, node) for g, node in resizes_changing_per_trip(graph))
        return PassResult(graph, rewritten > 0, {"resizes": rewritten} if rewritten else {})


def _rewrite(graph: Graph, resize: Node) -> int:
    """Hold ``resize``'s result as a canvas and rewrite its readers; 1 if done, 0 if left as it was."""
    sizes, data = resize.inputs[3], resize.inputs[0]
    if data is None or data.shape is None or sizes is None or sizes.shape != (len(data.shape),):
        return declined("its sizes are not one entry per axis of data of a known rank", at=resize) or 0
    why = unsupported(resize)
    if why is not None:
        return declined(f"loopc cannot compute its {why} as taps", at=resize) or 0
    rank = len(data.shape)
    resized = [a for a in range(rank) if not same_dim(shape_entry_source(sizes, a), data, a)]
    bounds = Bounder().entries(sizes)
    if not resized or bounds is None or any(bounds[a] is None for a in resized):
        return declined("the sizes it resizes to have no bound", at=resize) or 0
    lengths = {a: int(bounds[a] or 0) for a in resized}
    if math.prod(lengths.values()) > MAX_CANVAS:
        return declined(f"a canvas at its bound would hold {math.prod(lengths.values())} positions", at=resize) or 0
    padder = Padder(RESIZED)
    before: list[Node] = []
    padder.batches.append((resize, before))
    em = emitter(Graph(f"{resize.name}_canvas"), f"{resize.name or 'resize'}_canvas", resize.origin,
                 itertools.count()).into(before)
    extents = {a: size_entry(em, sizes, a) for a in resized}
    pads = []
    canvas = data
    for a in resized:
        position = em.const(np.arange(lengths[a]), np.int64)
        canvas = resample(em, canvas, a, rank, axis_taps(em, resize, position, em.dim(data, a), extents[a]))
        pads.append(Pad(a, extents[a], position, 0))
    out = resize.outputs[0]
    padder.views[out] = Padded(canvas, tuple(pads))
    assert resize.graph is graph
    after = list(graph.nodes)
    try:
        padder.rewrite_graph(graph, after[after.index(resize) + 1:])
    except Refused as why:
        return (None if str(why) == padder.why else declined(str(why), at=resize)) or 0
    if any(isinstance(use.user, Graph) for value in padder.views for use in value.uses()):
        return declined("its result, or a value padded as it is, is a result of the body", at=resize) or 0
    padder.finish()
    padder.replace_and_drop()
    padder.dead.insert(0, resize)
    padder.drop_dead()
    return 1
