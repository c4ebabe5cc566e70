"""The narrow-products pass on IR text: the columns of ``a·B`` that a Split leaves unread at either end
are not computed. Each case gives the IR before and after (written from what the pass promises) and
hand-computed outputs, which the IR interpreter checks before and after the pass."""

from __future__ import annotations

import numpy as np

from loopc.passes import NarrowProducts
from tests.passes.test_passes import check

A = np.arange(4, dtype=np.float32).reshape(2, 2)
W = np.arange(12, dtype=np.float32).reshape(2, 6)
#: A·W by hand: row 0 is W[1], row 1 is 2·W[0] + 3·W[1].
PRODUCT = np.array([[6, 7, 8, 9, 10, 11], [18, 23, 28, 33, 38, 43]], np.float32)
W_TEXT = "f32[2,6]:[0,1,2,3,4,5,6,7,8,9,10,11]"


def test_unread_first_piece_of_a_constant_product_is_not_computed() -> None:
    """The product takes the constant's last 4 columns; the Split keeps its last two pieces (and its
    origin, the user's node)."""
    result = check(NarrowProducts(), f"""
        graph main(%a: f32[2,2]) -> (%q, %r) {{
          %w: f32[2,6] = Constant() value={W_TEXT}
          %m: f32[2,6] = MatMul(%a, %w)
          %p: f32[2,2], %q: f32[2,2], %r: f32[2,2] = Split(%m) axis=-1 num_outputs=3
        }}
    """, f"""
        graph main(%a: f32[2,2]) -> (%q, %r) {{
          %w: f32[2,6] = Constant() value={W_TEXT}
          %m_read: f32[2,4] = Constant() value=f32[2,4]:[2,3,4,5,8,9,10,11]
          %m: f32[2,4] = MatMul(%a, %m_read)
          %m_pieces: i64[2] = Constant() value=i64[2]:[2,2]
          %q: f32[2,2], %r: f32[2,2] = Split(%m, %m_pieces) axis=-1 @p
        }}
    """, {"a": A}, [PRODUCT[:, 2:4], PRODUCT[:, 4:6]])
    assert result.stats == {"products": 1}


def test_one_read_piece_of_a_computed_matrix_is_a_slice_of_it() -> None:
    """B is not a constant: the product reads a Slice of it, and the Split goes."""
    check(NarrowProducts(), """
        graph main(%a: f32[2,2], %w: f32[2,6]) -> (%p) {
          %sizes: i64[2] = Constant() value=i64[2]:[4,2]
          %m: f32[2,6] = MatMul(%a, %w)
          %p: f32[2,4], %q: f32[2,2] = Split(%m, %sizes) axis=1
        }
    """, """
        graph main(%a: f32[2,2], %w: f32[2,6]) -> (%m) {
          %sizes: i64[2] = Constant() value=i64[2]:[4,2]
          %m_read_start: i64[1] = Constant() value=i64[1]:[0]
          %m_read_end: i64[1] = Constant() value=i64[1]:[4]
          %m_read_axis: i64[1] = Constant() value=i64[1]:[-1]
          %m_read: f32[2,4] = Slice(%w, %m_read_start, %m_read_end, %m_read_axis)
          %m: f32[2,4] = MatMul(%a, %m_read)
        }
    """, {"a": A, "w": W}, [PRODUCT[:, :4]])


def test_products_read_to_both_ends_or_split_unevenly_are_left_alone() -> None:
    """An unread piece between read ones stays (the columns kept are one range); 6 columns in 4
    pieces are uneven (2, 2, 2, 0); a product with a second reader is read whole."""
    head = f"""%w: f32[2,6] = Constant() value={W_TEXT}
          %m: f32[2,6] = MatMul(%a, %w)"""
    for body, expected in [
        ("""%p: f32[2,2], %q: f32[2,2], %r: f32[2,2] = Split(%m) axis=-1 num_outputs=3
          %s: f32[2,2] = Add(%p, %r)""", PRODUCT[:, :2] + PRODUCT[:, 4:]),
        ("""%p: f32[2,2], %q: f32[2,2], %r: f32[2,2], %u: f32[2,0] = Split(%m) axis=-1 num_outputs=4
          %s: f32[2,2] = Relu(%p)""", PRODUCT[:, :2]),
        ("""%p: f32[2,3], %q: f32[2,3] = Split(%m) axis=-1 num_outputs=2
          %n: f32[2,6] = Relu(%m)
          %s: f32[2,3] = Add(%p, %p)""", 2 * PRODUCT[:, :3]),
    ]:
        graph = f"""
        graph main(%a: f32[2,2]) -> (%s) {{
          {head}
          {body}
        }}"""
        result = check(NarrowProducts(), graph, graph, {"a": A}, [expected])
        assert result.stats == {}


def test_a_split_in_a_loop_body_below_the_product() -> None:
    """The product is outside the loop, its Split inside (reading an outer value): the pieces' sizes
    go where the Split is. Two trips add the product's last 4 columns to zeros twice."""
    check(NarrowProducts(), f"""
        graph main(%a: f32[2,2]) -> (%t, %u) {{
          %w: f32[2,6] = Constant() value={W_TEXT}
          %m: f32[2,6] = MatMul(%a, %w)
          %n: i64[] = Constant() value=i64[]:[2]
          %zeros: f32[2,2] = Constant() value=f32[2,2]:[0,0,0,0]
          %t: f32[2,2], %u: f32[2,2] = loop count=%n {{
            recurrence %s: f32[2,2] = %zeros -> %s_next
            recurrence %v: f32[2,2] = %zeros -> %v_next
            %p: f32[2,2], %q: f32[2,2], %r: f32[2,2] = Split(%m) axis=-1 num_outputs=3
            %s_next: f32[2,2] = Add(%s, %q)
            %v_next: f32[2,2] = Add(%v, %r)
            last %t = %s
            last %u = %v
          }}
        }}
    """, f"""
        graph main(%a: f32[2,2]) -> (%t, %u) {{
          %w: f32[2,6] = Constant() value={W_TEXT}
          %m_read: f32[2,4] = Constant() value=f32[2,4]:[2,3,4,5,8,9,10,11]
          %m: f32[2,4] = MatMul(%a, %m_read)
          %n: i64[] = Constant() value=i64[]:[2]
          %zeros: f32[2,2] = Constant() value=f32[2,2]:[0,0,0,0]
          %t: f32[2,2], %u: f32[2,2] = loop count=%n {{
            recurrence %s: f32[2,2] = %zeros -> %s_next
            recurrence %v: f32[2,2] = %zeros -> %v_next
            %m_pieces: i64[2] = Constant() value=i64[2]:[2,2]
            %q: f32[2,2], %r: f32[2,2] = Split(%m, %m_pieces) axis=-1 @p
            %s_next: f32[2,2] = Add(%s, %q)
            %v_next: f32[2,2] = Add(%v, %r)
            last %t = %s
            last %u = %v
          }}
        }}
    """, {"a": A}, [2 * PRODUCT[:, 2:4], 2 * PRODUCT[:, 4:6]])
