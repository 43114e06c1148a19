"""Models of shape arithmetic for the folding and symbolic-dim checks
(check_fold.py, check_symdim.py)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name + "_v"))


def window_model(rng, C=8, win=7):
    """x [1, C, H, W] -> pad H and W to multiples of win (pads from Shape,
    Mod, Sub), transpose to [1, Hp*Wp, C], x * C^-0.5 (Pow), + an additive
    mask [Hp*Wp, C] built from Range/Expand/Equal/Where/ScatterND/Tile,
    reshaped by a target computed from the shape; then a MatMul."""
    n = [
        helper.make_node("Shape", ["x"], ["s"]),
        const("i2", np.int64(2)), const("i3", np.int64(3)), const("win", np.int64(win)),
        helper.make_node("Gather", ["s", "i2"], ["h"]), helper.make_node("Gather", ["s", "i3"], ["w"]),
        # pad = (win - h % win) % win
        helper.make_node("Mod", ["h", "win"], ["hm"]), helper.make_node("Sub", ["win", "hm"], ["hs"]),
        helper.make_node("Mod", ["hs", "win"], ["ph"]),
        helper.make_node("Mod", ["w", "win"], ["wm"]), helper.make_node("Sub", ["win", "wm"], ["ws"]),
        helper.make_node("Mod", ["ws", "win"], ["pw"]),
        const("z4", np.zeros(6, np.int64)), const("ax", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["ph", "ax"], ["ph1"]), helper.make_node("Unsqueeze", ["pw", "ax"], ["pw1"]),
        const("z6", np.zeros(6, np.int64)),
        helper.make_node("Concat", ["z6", "ph1", "pw1"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["xp"], mode="constant"),
        # Hp * Wp
        helper.make_node("Add", ["h", "ph"], ["hp"]), helper.make_node("Add", ["w", "pw"], ["wp"]),
        helper.make_node("Mul", ["hp", "wp"], ["L"]),
        helper.make_node("Unsqueeze", ["L", "ax"], ["L1"]),
        const("c1", np.array([1], np.int64)), const("cC", np.array([C], np.int64)),
        helper.make_node("Concat", ["c1", "cC", "L1"], ["tgt"], axis=0),
        helper.make_node("Reshape", ["xp", "tgt"], ["xr"]),
        const("perm_dummy", np.int64(0)),
        helper.make_node("Transpose", ["xr"], ["xt"], perm=[0, 2, 1]),
        # scale C^-0.5 by Pow on floats made from the shape
        helper.make_node("Gather", ["s", "c1s"], ["cdim"]), const("c1s", np.int64(1)),
        helper.make_node("Cast", ["cdim"], ["cf"], to=TensorProto.FLOAT),
        const("mhalf", np.float32(-0.5)), helper.make_node("Pow", ["cf", "mhalf"], ["scale"]),
        helper.make_node("Mul", ["xt", "scale"], ["xs"]),
        # mask: r = Range(0, L), region = r % win, eq = Equal(Expand(region) , transposed) -> Where(eq, 0, -100)
        const("zero", np.int64(0)), const("one", np.int64(1)),
        helper.make_node("Range", ["zero", "L", "one"], ["r"]),
        helper.make_node("Mod", ["r", "win"], ["reg"]),
        helper.make_node("Unsqueeze", ["reg", "c1"], ["regc"]),
        helper.make_node("Concat", ["L1", "cC"], ["mshape"], axis=0),
        helper.make_node("Expand", ["regc", "mshape"], ["rege"]),
        const("cmod", np.arange(C, dtype=np.int64) % win),
        helper.make_node("Equal", ["rege", "cmod"], ["eq"]),
        helper.make_node("Not", ["eq"], ["neq"]),
        const("fz", np.float32(0)), const("fm", np.float32(-100)),
        helper.make_node("Where", ["neq", "fm", "fz"], ["m0"]),
        # ScatterND: row 0 of the mask set to 1
        const("idx", np.array([[0]], np.int64)),
        helper.make_node("ConstantOfShape", ["cC"], ["ones"], value=numpy_helper.from_array(np.array([1], np.float32))),
        helper.make_node("Unsqueeze", ["ones", "ax"], ["ones1"]),
        helper.make_node("ScatterND", ["m0", "idx", "ones1"], ["m1"]),
        const("rep", np.array([1, 1], np.int64)),
        helper.make_node("Tile", ["m1", "rep"], ["m2"]),
        helper.make_node("Sqrt", ["fm2"], ["fsq"]), const("fm2", np.float32(4.0)),
        helper.make_node("Mul", ["m2", "fsq"], ["mask"]),
        helper.make_node("Add", ["xs", "mask"], ["xa"]),
        helper.make_node("MatMul", ["xa", "wmat"], ["y"]),
    ]
    # topological order for the Constant nodes that come after their readers above
    consts = [x for x in n if x.op_type == "Constant"]
    others = [x for x in n if x.op_type != "Constant" and x.output[0] != "perm_dummy"]
    wmat = numpy_helper.from_array((rng.randn(C, 16) / np.sqrt(C)).astype(np.float32), "wmat")
    arith = {x.output[0] for x in others if x.op_type not in ("Pad", "Reshape", "Transpose", "Mul", "Add", "MatMul")
             or x.output[0] in ("hp", "wp", "L", "mask")}
    return consts + others, [wmat], arith


def window_reference(x, wmat, win=7):
    _, C, H, W = x.shape
    ph, pw = (win - H % win) % win, (win - W % win) % win
    xp = np.pad(x, ((0, 0), (0, 0), (0, ph), (0, pw)))
    L = (H + ph) * (W + pw)
    xt = xp.reshape(1, C, L).transpose(0, 2, 1) * np.float32(C) ** np.float32(-0.5)
    reg = (np.arange(L) % win)[:, None].repeat(C, 1)
    m = np.where(reg != (np.arange(C) % win), np.float32(-100), np.float32(0))
    m[0] = 1
    return ((xt + m * 2).astype(np.float32) @ wmat)
