"""Issue 9's table, one small model per row, checked against onnxruntime the generic way.

Every dim and every known value shapeflow states for any tensor of the model must equal the
runtime's at seq = 0, 1, 2, 3, 5, 257 (unknown is fine); ``optimize`` must keep the outputs
bit-identical (dtype, shape, bytes) at seq = 0, 1, 2, 5. Bindings at which the model itself fails
in onnxruntime are not checked. The oracle is ``fuzz/shapearith.py``'s (``check_model``), the one
the differential fuzzer uses; a failure prints the finding lines and the model.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import onnx
import onnx.parser
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith

INT64_MAX = 2**63 - 1
INFER_SEQS = (0, 1, 2, 3, 5, 257)
OPTIMIZE_SEQS = (0, 1, 2, 5)


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def model(body: str, *, inputs: str = "float[seq] x", outputs: str, inits: str = "",
          opset: int = 17) -> onnx.ModelProto:
    ir = 8 if opset <= 18 else 10
    text = (f'<ir_version: {ir}, opset_import: ["" : {opset}]>\n'
            f"edge ({inputs}) => ({outputs})\n" + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n")
    m = onnx.parser.parse_model(text)
    onnx.checker.check_model(m)
    return m


def check(runner: shapearith.Runner, m: onnx.ModelProto, seqs: tuple[int, ...] = INFER_SEQS) -> None:
    stats = shapearith.check_model(m, [{"seq": s} for s in seqs], runner,
                                   optimize_bindings=[{"seq": s} for s in OPTIMIZE_SEQS if s in seqs])
    # the model must run somewhere, or the test checks nothing
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime at every binding"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings) + "\n" + shapearith._model_text(m),
                    pytrace=False)


# -- Slice: clamping of starts/ends to [0, dim] on a symbolic dim ----------------------------------

def test_slice_last_three_of_seq_is_min_3_seq_or_unknown(runner: shapearith.Runner) -> None:
    """x[-3:] on [seq]: shapeflow stated [3]; the runtime gives [min(3, seq)]."""
    check(runner, model("y = Slice(x, s, e)", outputs="float[?] y",
                        inits=f"int64[1] s = {{-3}}, int64[1] e = {{{INT64_MAX}}}"))


def test_slice_from_two_is_never_negative(runner: shapearith.Runner) -> None:
    """x[2:] on [seq]: shapeflow stated seq - 2 (-1 at seq=1); the runtime gives 0."""
    check(runner, model("y = Slice(x, s, e)", outputs="float[?] y",
                        inits=f"int64[1] s = {{2}}, int64[1] e = {{{INT64_MAX}}}"))


def test_slice_to_minus_two_is_never_negative(runner: shapearith.Runner) -> None:
    """x[:-2] on [seq]: seq - 2 would be -1 at seq=1; the runtime gives 0."""
    check(runner, model("y = Slice(x, s, e)", outputs="float[?] y",
                        inits="int64[1] s = {0}, int64[1] e = {-2}"))


def test_slice_negative_window_on_short_seq(runner: shapearith.Runner) -> None:
    """x[-2:-1] on [seq]: 1 only from seq >= 2, 0 below."""
    check(runner, model("y = Slice(x, s, e)", outputs="float[?] y",
                        inits="int64[1] s = {-2}, int64[1] e = {-1}"))


def test_slice_reversed_with_int64_min_end(runner: shapearith.Runner) -> None:
    """x[::-1] with ends=INT64_MIN: seq elements at every seq, 0 included."""
    check(runner, model("y = Slice(x, s, e, a, st)", outputs="float[?] y",
                        inits=f"int64[1] s = {{-1}}, int64[1] e = {{{-INT64_MAX - 1}}}, "
                              "int64[1] a = {0}, int64[1] st = {-1}"))


def test_slice_last_three_tokens_of_batch_seq(runner: shapearith.Runner) -> None:
    """x[:, -3:] on [2, seq, 4] (the last k tokens, as exporters write it)."""
    check(runner, model("y = Slice(x, s, e, a)", inputs="float[2,seq,4] x", outputs="float[?,?,?] y",
                        inits=f"int64[1] s = {{-3}}, int64[1] e = {{{INT64_MAX}}}, int64[1] a = {{1}}"))


# -- Range: max(ceil((limit - start) / delta), 0) ---------------------------------------------------

def test_range_to_seq_minus_5_is_never_negative(runner: shapearith.Runner) -> None:
    """Range(0, seq - 5, 1): shapeflow stated seq - 5; the runtime gives [0] for seq < 5."""
    check(runner, model(
        "sh = Shape(x)\n n = Gather<axis=0>(sh, zero)\n lim = Sub(n, five)\n y = Range(zero, lim, one)",
        outputs="int64[?] y", inits="int64 zero = {0}, int64 five = {5}, int64 one = {1}"))


def test_range_step_two_length_is_ceil(runner: shapearith.Runner) -> None:
    """Range(0, seq, 2) has ceil(seq/2) elements, not floor."""
    check(runner, model(
        "sh = Shape(x)\n n = Gather<axis=0>(sh, zero)\n y = Range(zero, n, two)",
        outputs="int64[?] y", inits="int64 zero = {0}, int64 two = {2}"))


# -- integer Div truncates toward zero; Mod's sign -------------------------------------------------

def test_int64_div_of_negative_shape_value_truncates(runner: shapearith.Runner) -> None:
    """(seq - 5) / 2 in int64: truncation toward zero (-1 at seq=2), not floor (-2)."""
    check(runner, model(
        "sh = Shape(x)\n d = Sub(sh, five)\n y = Div(d, two)",
        outputs="int64[1] y", inits="int64[1] five = {5}, int64[1] two = {2}"))


def test_int64_div_of_negated_seq_truncates(runner: shapearith.Runner) -> None:
    """-seq / 3 in int64: 0 at seq=1, not -1."""
    check(runner, model("sh = Shape(x)\n n = Neg(sh)\n y = Div(n, three)", outputs="int64[1] y",
                        inits="int64[1] three = {3}"))


def test_int64_div_by_negative_constant_truncates(runner: shapearith.Runner) -> None:
    """seq / -3: 0 at seq=1 and 2, not -1."""
    check(runner, model("sh = Shape(x)\n y = Div(sh, k)", outputs="int64[1] y", inits="int64[1] k = {-3}"))


def test_mod_fmod0_takes_the_divisors_sign(runner: shapearith.Runner) -> None:
    """Mod(seq - 5, 3) with fmod=0: the sign of the divisor (Python's %)."""
    check(runner, model("sh = Shape(x)\n d = Sub(sh, five)\n y = Mod<fmod=0>(d, three)",
                        outputs="int64[1] y", inits="int64[1] five = {5}, int64[1] three = {3}"))


def test_mod_fmod0_by_negative_divisor(runner: shapearith.Runner) -> None:
    """Mod(seq, -3) with fmod=0: 0 or negative (Python's %), e.g. -2 at seq=1."""
    check(runner, model("sh = Shape(x)\n y = Mod<fmod=0>(sh, k)", outputs="int64[1] y",
                        inits="int64[1] k = {-3}"))


def test_mod_fmod1_takes_the_dividends_sign(runner: shapearith.Runner) -> None:
    """Mod(seq - 5, -3) with fmod=1: C's fmod, the sign of the dividend."""
    check(runner, model("sh = Shape(x)\n d = Sub(sh, five)\n y = Mod<fmod=1>(d, k)",
                        outputs="int64[1] y", inits="int64[1] five = {5}, int64[1] k = {-3}"))


# -- Cast wraps, truncates and rounds --------------------------------------------------------------

_ELEM = {"2": "uint8", "6": "int32", "10": "float16", "3": "int8", "5": "int16", "4": "uint16",
         "12": "uint32", "13": "uint64", "16": "bfloat16", "1": "float", "11": "double", "9": "bool"}


def _cast_const(to: str, value: int) -> onnx.ModelProto:
    """Cast(value) of a constant, and Cast(seq + value) (equal at seq=0), each also back to int64.
    (bfloat16 tensors stay inside: onnxruntime's Python API cannot return them.)"""
    elem = _ELEM[to]
    outs = "int64 cc, int64[1] cb" + ("" if to == "16" else f", {elem} c, {elem}[1] cs")
    return model(f"c = Cast<to={to}>(v)\n sh = Shape(x)\n s = Add(sh, v1)\n cs = Cast<to={to}>(s)\n"
                 " cb = Cast<to=7>(cs)\n cc = Cast<to=7>(c)",
                 outputs=outs, inits=f"int64 v = {{{value}}}, int64[1] v1 = {{{value}}}")


def test_cast_300_to_uint8_wraps_to_44(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("2", 300))


def test_cast_2_pow_32_plus_3_to_int32_wraps_to_3(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("6", 2**32 + 3))


def test_cast_2049_to_float16_rounds_to_2048(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("10", 2049))


def test_cast_200_to_int8_wraps_negative(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("3", 200))


def test_cast_70000_to_int16_and_uint16_wraps(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("5", 70000))
    check(runner, _cast_const("4", 70000))


def test_cast_negative_to_uint32_and_uint64_wraps(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("12", -5))
    check(runner, _cast_const("13", -5))


def test_cast_257_to_bfloat16_rounds(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("16", 257))


def test_cast_large_to_float_rounds(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("1", 2**24 + 1))


def test_cast_to_bool_is_nonzero(runner: shapearith.Runner) -> None:
    check(runner, _cast_const("9", 2))


def test_cast_seq_through_uint8_round_trip_wraps_at_257(runner: shapearith.Runner) -> None:
    """Cast(Cast(seq, UINT8), INT64): shapeflow stated seq; the runtime gives 1 at seq=257."""
    check(runner, model("sh = Shape(x)\n u = Cast<to=2>(sh)\n y = Cast<to=7>(u)", outputs="int64[1] y"))


def test_cast_seq_through_float16_round_trip_at_257(runner: shapearith.Runner) -> None:
    """float16 holds every int up to 2048: the round trip is exact at these bindings, and stated
    values must still match."""
    check(runner, model("sh = Shape(x)\n u = Cast<to=10>(sh)\n y = Cast<to=7>(u)", outputs="int64[1] y"))


# -- float arithmetic stays float ------------------------------------------------------------------

def test_float_div_then_ceil_of_seq(runner: shapearith.Runner) -> None:
    """Ceil(seq / 2.0) in float: 2 at seq=3; shapeflow stated floor(seq/2)."""
    check(runner, model(
        "sh = Shape(x)\n f = Cast<to=1>(sh)\n d = Div(f, two)\n c = Ceil(d)\n y = Cast<to=7>(c)",
        outputs="int64[1] y", inits="float two = {2.0}"))


def test_float_div_value_is_not_an_int(runner: shapearith.Runner) -> None:
    """seq / 2.0 in float is 0.5 at seq=1: a stated value must not be floor'ed."""
    check(runner, model("sh = Shape(x)\n f = Cast<to=1>(sh)\n y = Div(f, two)", outputs="float[1] y",
                        inits="float two = {2.0}"))


def test_float_div_then_cast_truncates_toward_zero(runner: shapearith.Runner) -> None:
    """Cast(-seq / 2.0 -> int64) truncates: 0 at seq=1, not -1."""
    check(runner, model(
        "sh = Shape(x)\n n = Neg(sh)\n f = Cast<to=1>(n)\n d = Div(f, two)\n y = Cast<to=7>(d)",
        outputs="int64[1] y", inits="float two = {2.0}"))


def test_ceil_div_reshape_target(runner: shapearith.Runner) -> None:
    """A data shape from float Div then Ceil: ConstantOfShape([ceil(seq/2)])."""
    check(runner, model(
        "sh = Shape(x)\n f = Cast<to=1>(sh)\n d = Div(f, two)\n c = Ceil(d)\n n = Cast<to=7>(c)\n"
        " y = ConstantOfShape(n)", outputs="float[?] y", inits="float two = {2.0}"))


# -- int64 wraps ------------------------------------------------------------------------------------

def test_int64_mul_overflow_wraps(runner: shapearith.Runner) -> None:
    """(seq + 1) * 2^62 wraps (INT64_MIN at seq=1, 0 at seq=3)."""
    check(runner, model("sh = Shape(x)\n a = Add(sh, one)\n y = Mul(a, big)", outputs="int64[1] y",
                        inits=f"int64[1] one = {{1}}, int64[1] big = {{{2**62}}}"))


def test_int64_mul_overflow_of_constants_wraps(runner: shapearith.Runner) -> None:
    """(2^32 + 1) * (2^32 + 3) = 2^64 + 4*2^32 + 3 wraps to 4*2^32 + 3."""
    check(runner, model("sh = Shape(x)\n p = Mul(a, b)\n y = Add(p, sh)", outputs="int64[1] y",
                        inits=f"int64[1] a = {{{2**32 + 1}}}, int64[1] b = {{{2**32 + 3}}}"))


def test_int64_add_overflow_wraps(runner: shapearith.Runner) -> None:
    """seq + INT64_MAX wraps negative from seq=1."""
    check(runner, model("sh = Shape(x)\n y = Add(sh, big)", outputs="int64[1] y",
                        inits=f"int64[1] big = {{{INT64_MAX}}}"))


def test_int64_sub_overflow_wraps(runner: shapearith.Runner) -> None:
    """-seq - INT64_MAX - 1 wraps positive from seq=1."""
    check(runner, model("sh = Shape(x)\n n = Neg(sh)\n y = Sub(n, big)", outputs="int64[1] y",
                        inits=f"int64[1] big = {{{INT64_MAX}}}"))


# -- negative indices, Min/Max/Abs/Neg, Where, comparisons ------------------------------------------

def test_gather_negative_index_on_symbolic_rank_shape(runner: shapearith.Runner) -> None:
    check(runner, model("sh = Shape(x)\n y = Gather<axis=0>(sh, m1)", inputs="float[2,seq] x",
                        outputs="int64 y", inits="int64 m1 = {-1}"))


def test_min_max_abs_neg_of_seq_minus_3(runner: shapearith.Runner) -> None:
    check(runner, model(
        "sh = Shape(x)\n d = Sub(sh, three)\n a = Abs(d)\n n = Neg(d)\n mn = Min(d, zero)\n"
        " mx = Max(d, zero)\n y = Concat<axis=0>(a, n, mn, mx)",
        outputs="int64[4] y", inits="int64[1] three = {3}, int64[1] zero = {0}"))


def test_where_equal_less_greater_on_seq(runner: shapearith.Runner) -> None:
    check(runner, model(
        "sh = Shape(x)\n e = Equal(sh, two)\n l = Less(sh, two)\n g = Greater(sh, two)\n"
        " a = Where(e, sh, ten)\n b = Where(l, sh, ten)\n c = Where(g, sh, ten)\n"
        " y = Concat<axis=0>(a, b, c)",
        outputs="int64[3] y", inits="int64[1] two = {2}, int64[1] ten = {10}"))


# -- Expand / Reshape / broadcasting when a symbolic dim may be 1 -----------------------------------

def test_expand_by_symbolic_dim_that_may_be_one(runner: shapearith.Runner) -> None:
    """Expand([seq] -> [3, seq]) and Expand([3,1] by [1, seq]): seq may be 0 or 1."""
    check(runner, model(
        "sh = Shape(x)\n t = Concat<axis=0>(three, sh)\n y = Expand(x, t)\n"
        " u = Concat<axis=0>(one, sh)\n z = Expand(w, u)",
        inputs="float[seq] x, float[3,1] w", outputs="float[?,?] y, float[?,?] z",
        inits="int64[1] three = {3}, int64[1] one = {1}"))


def test_add_broadcast_with_symbolic_dim(runner: shapearith.Runner) -> None:
    """[seq] + [3]: valid only at seq 1 or 3; where it runs, the stated dims hold."""
    check(runner, model("y = Add(x, w)", inputs="float[seq] x, float[3] w", outputs="float[?] y"))


def test_reshape_zero_and_minus_one(runner: shapearith.Runner) -> None:
    """Reshape([2, seq, 4] -> [0, -1]) and -> [-1, 4]: the -1 is 4*seq and 2*seq, 0 at seq=0."""
    check(runner, model(
        "y = Reshape(x, t)\n z = Reshape(x, u)", inputs="float[2,seq,4] x",
        outputs="float[?,?] y, float[?,?] z", inits="int64[2] t = {0, -1}, int64[2] u = {-1, 4}"))


def test_reshape_allowzero_copies_a_zero(runner: shapearith.Runner) -> None:
    """allowzero=1 with target Shape(x): a 0 in the target is a dim, not 'copy'."""
    check(runner, model("sh = Shape(x)\n y = Reshape<allowzero=1>(x, sh)", inputs="float[seq,2] x",
                        outputs="float[?,?] y", opset=14))


# -- optimize must not fold a fact that does not hold --------------------------------------------------

def test_optimize_reshape_to_concat_of_slice_of_shape(runner: shapearith.Runner) -> None:
    """Reshape(x[-3:], Concat([1], Shape(x[-3:]))): folding the target to [1, 3] breaks seq < 3."""
    check(runner, model(
        "s = Slice(x, st, en)\n sh = Shape(s)\n t = Concat<axis=0>(one, sh)\n y = Reshape(s, t)",
        outputs="float[?,?] y",
        inits=f"int64[1] st = {{-3}}, int64[1] en = {{{INT64_MAX}}}, int64[1] one = {{1}}"))


def test_optimize_reshape_to_slice_of_shape_minus_3(runner: shapearith.Runner) -> None:
    """Reshape(y, Concat([-1], Slice(Shape(x), -3))) on x: [batch, seq, 4]."""
    check(runner, model(
        "sh = Shape(x)\n tail = Slice(sh, st, en)\n t = Concat<axis=0>(m1, tail)\n r = Reshape(x, t)\n"
        " y = Slice(r, st2, en, ax)",
        inputs="float[2,seq,4] x", outputs="float[?,?,?,?] y",
        inits=f"int64[1] st = {{-3}}, int64[1] en = {{{INT64_MAX}}}, int64[1] m1 = {{-1}}, "
              "int64[1] st2 = {-3}, int64[1] ax = {2}"))


def test_kv_cache_with_empty_past(runner: shapearith.Runner) -> None:
    """past ++ new along the sequence; a mask over the total length; past may be 0."""
    m = model(
        "kv = Concat<axis=1>(past, new)\n sh = Shape(kv)\n tot = Gather<axis=0>(sh, one)\n"
        " nsh = Shape(new)\n n = Gather<axis=0>(nsh, one)\n start = Sub(tot, n)\n"
        " r = Range(start, tot, onei)\n t = Unsqueeze(tot, zeroa)\n nn = Unsqueeze(n, zeroa)\n"
        " ms = Concat<axis=0>(nn, t)\n mask = ConstantOfShape(ms)\n last = Slice(kv, m1, big, one1)",
        inputs="float[1,seq,4] past, float[1,3,4] new",
        outputs="int64[?] r, float[?,?] mask, float[?,?,?] last",
        inits=f"int64 one = {{1}}, int64 onei = {{1}}, int64[1] zeroa = {{0}}, int64[1] m1 = {{-1}}, "
              f"int64[1] big = {{{INT64_MAX}}}, int64[1] one1 = {{1}}")
    check(runner, m)


def test_pad_with_negative_pad_on_short_seq(runner: shapearith.Runner) -> None:
    """Pad [seq] by (-2 before, 1 after): seq - 1 from seq=2; onnxruntime fails below."""
    check(runner, model("y = Pad(x, p)", outputs="float[?] y", inits="int64[2] p = {-2, 1}"))


def test_tile_by_seq_minus_one_clamped(runner: shapearith.Runner) -> None:
    """Tile([2] by max(seq - 1, 0)): 0 repeats at seq 0 and 1."""
    check(runner, model("sh = Shape(x)\n d = Sub(sh, one)\n r = Max(d, zero)\n y = Tile(w, r)",
                        inputs="float[seq] x, float[2] w", outputs="float[?] y",
                        inits="int64[1] one = {1}, int64[1] zero = {0}"))


def test_squeeze_unsqueeze_of_shape_value(runner: shapearith.Runner) -> None:
    check(runner, model(
        "sh = Shape(x)\n g = Gather<axis=0>(sh, zi)\n u = Unsqueeze(g, za)\n s = Squeeze(u, za)\n"
        " k = Sub(s, three)\n y = Unsqueeze(k, za)",
        outputs="int64[1] y", inits="int64 zi = {0}, int64[1] za = {0}, int64 three = {3}"))


# -- found by the fuzzer (fuzz/shapearith.py), kept as named regressions ------------------------------

def test_reshape_target_zero_copies_the_input_dim(runner: shapearith.Runner) -> None:
    """Reshape([3], Shape(x)) with x: [seq]: at seq=0 the target [0] copies the input dim (3);
    shapeflow stated [seq]. Onnxruntime runs it at seq 0 and 3."""
    check(runner, model("sh = Shape(x)\n y = Reshape(w, sh)", inputs="float[seq] x, float[3] w",
                        outputs="float[?] y"))


def test_reshape_minus_one_with_a_zero_that_copies(runner: shapearith.Runner) -> None:
    """Reshape([2, seq, 4], [-1, 2, seq, 4]): at seq=0 the 0 copies dim 2 (4), so -1 becomes 0."""
    check(runner, model(
        "sh = Shape(x)\n t = Concat<axis=0>(m1, sh)\n y = Reshape(x, t)", inputs="float[2,seq,4] x",
        outputs="float[?,?,?,?] y", inits="int64[1] m1 = {-1}"))


def test_slice_negative_step_on_short_length(runner: shapearith.Runner) -> None:
    """x[-2:-4:-2] on [seq]: start clamps to [0, seq-1], end to [-1, seq-1]: 1 element at seq=1."""
    check(runner, model("y = Slice(x, s, e, a, st)", outputs="float[?] y",
                        inits="int64[1] s = {-2}, int64[1] e = {-4}, int64[1] a = {0}, int64[1] st = {-2}"))


def test_slice_negative_step_of_a_length_one_shape(runner: shapearith.Runner) -> None:
    """Shape(x)[-2:-4:-2] on x: [seq] (a length-1 vector): start -2 clamps to 0, end -4 to -1,
    so the result is [seq], 1 element (the fuzzer found 0 stated)."""
    check(runner, model("sh = Shape(x)\n y = Slice(sh, s, e, a, st)", outputs="int64[?] y",
                        inits="int64[1] s = {-2}, int64[1] e = {-4}, int64[1] a = {0}, int64[1] st = {-2}"))


def test_mod_fmod1_positive_by_negative_divisor(runner: shapearith.Runner) -> None:
    """Mod(seq, -2) with fmod=1: C's fmod, 1 at seq=3 (Python's % gives -1)."""
    check(runner, model("sh = Shape(x)\n y = Mod<fmod=1>(sh, k)", outputs="int64[1] y",
                        inits="int64[1] k = {-2}"))


def test_float32_mul_of_shape_values_rounds(runner: shapearith.Runner) -> None:
    """(seq + 4097)^2 in float32 is above 2^24: the runtime rounds (16785408 at seq=0)."""
    check(runner, model("sh = Shape(x)\n a = Add(sh, k)\n f = Cast<to=1>(a)\n y = Mul(f, f)",
                        outputs="float[1] y", inits="int64[1] k = {4097}"))


def test_slice_from_int64_min_start(runner: shapearith.Runner) -> None:
    """x[INT64_MIN:-1] on [seq]: seq - 1 from seq=1, 0 at seq=0 (the fuzzer found INT64_MAX stated)."""
    check(runner, model("y = Slice(x, s, e, a)", outputs="float[?] y",
                        inits=f"int64[1] s = {{{-INT64_MAX - 1}}}, int64[1] e = {{-1}}, int64[1] a = {{0}}"))


def test_float_div_of_seq_by_itself_is_nan_at_zero(runner: shapearith.Runner) -> None:
    """float(seq) / float(seq) is NaN at seq=0: stating 1 is unsound, and optimize must not fold it
    (the cancellation seq/seq = 1 holds only where a model would fail, which float Div does not)."""
    check(runner, model(
        "sh = Shape(x)\n f = Cast<to=1>(sh)\n d = Div(f, f)\n y = Cast<to=7>(d)",
        outputs="float[1] d, int64[1] y"))


def test_squeeze_without_axes_when_seq_may_be_one(runner: shapearith.Runner) -> None:
    """Squeeze() of [seq, 1] drops seq too at seq=1: rank 0 there, rank 1 elsewhere."""
    check(runner, model("y = Squeeze(x)\n n = Size(y)", inputs="float[seq,1] x", outputs="int64 n"))


def test_pad_with_axes_input_on_short_seq(runner: shapearith.Runner) -> None:
    """Pad (opset 18) of [2, seq] on axis -1 only by (-1, 2): seq + 1, onnxruntime fails at 0."""
    check(runner, model("y = Pad(x, p, , a)", inputs="float[2,seq] x", outputs="float[?,?] y",
                        inits="int64[2] p = {-1, 2}, int64[1] a = {-1}", opset=18))
