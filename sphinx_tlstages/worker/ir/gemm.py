"""Which instruction each tile-level gemm became: every ``T.gemm`` call of the module as
built, traced to the block ``tl.LowerTileOp`` made of it and the intrinsic that block
calls (``mma_sync``, ``wgmma``, ``tcgen05``, ``mfma``, on Apple's GPUs
``simdgroup_multiply_accumulate`` or Metal 4's cooperative-tensor ``matmul2d``, or ``fma``
when none fits)."""

from __future__ import annotations

from typing import Any

from tilelang import tvm
from tvm.tirx.stmt_functor import pre_order_visit

from .walk import op_name

# Tile-level gemm operations as they enter the lowering (T.gemm and its explicit forms).
_GEMM_OPS = ("tl.tileop.gemm", "tl.tileop.wgmma_gemm", "tl.tileop.tcgen05_gemm",
             "tl.tileop.gemm_sp", "tl.tileop.gemm_blockscaled",
             "tl.tileop.tcgen05_gemm_blockscaled")
# The intrinsic inside a lowered gemm block that names its instruction (its descriptors
# and fences are named alike, hence the ptx_ prefixes), in the order they are looked
# for: (part of the op name, instruction).
_INSTRUCTIONS = (("ptx_tcgen05_mma", "tcgen05"), ("ptx_wgmma", "wgmma"),
                 ("ptx_mma", "mma_sync"), ("tvm_mfma", "mfma"), ("wmma", "wmma"),
                 ("simdgroup_multiply_accumulate", "simdgroup_multiply_accumulate"),
                 ("cooperative_tensor_multiply_accumulate", "matmul2d"))
# Metal's simdgroup matrices are 8x8 (simdgroup_half8x8, simdgroup_float8x8); Metal 4's
# matmul2d takes its M, N and K as arguments 8 to 10 of TileLang's call.
_SIMDGROUP_FORM = "8x8"


def _operand(arg: Any) -> str:
    """The buffer a gemm operand names: ``T.region(A_shared[...], ...)`` or a load."""
    load = arg.args[0] if isinstance(arg, tvm.tirx.Call) and arg.args else arg
    buffer = getattr(load, "buffer", load)
    return str(getattr(buffer, "name", "?"))


def gemm_calls(func: Any) -> list[tuple[str, ...]]:
    """The (A, B, C) buffer names of each tile-level gemm call, in pre-order (which, in
    the module as built, is source order). TVM's visitors visit a node once: a call
    that pipelining shares between the loop and its drain is one call here."""
    found: list[tuple[str, ...]] = []

    def visit(node: Any) -> bool:
        if isinstance(node, tvm.tirx.Call) and op_name(node) in _GEMM_OPS:
            found.append(tuple(_operand(a) for a in node.args[:3]))
        return True

    pre_order_visit(func.body, visit)
    return found


def _instruction(block: Any, ops: list[Any]) -> dict[str, str]:
    """The instruction a gemm block's intrinsic calls (``ops``, in pre-order) name."""
    for part, instruction in _INSTRUCTIONS:
        call = next((c for c in ops if part in op_name(c)), None)
        if call is None:
            continue
        if instruction in ("mma_sync", "mfma") and isinstance(call.args[0], tvm.tirx.StringImm):
            form = str(call.args[0].value)  # the shape: m16n8k16, f32_16x16x16f16
        elif instruction in ("wgmma", "tcgen05"):
            form = op_name(call).rsplit("_", 1)[-1]  # where A and B live: ss, rs, ts
        elif instruction == "simdgroup_multiply_accumulate":
            form = _SIMDGROUP_FORM
        elif instruction == "matmul2d" and len(call.args) > 10 and all(
                isinstance(a, tvm.tirx.IntImm) for a in call.args[8:11]):
            form = "x".join(str(int(a.value)) for a in call.args[8:11])
        else:
            form = op_name(call).rsplit(".", 1)[-1]
        return {"instruction": instruction, "form": form}
    name = str(block.name_hint)
    if name.endswith("_fma"):
        return {"instruction": "fma", "form": name}
    return {"instruction": "none", "form": name}


def _calls_and_names(node: Any) -> tuple[list[Any], set[str]]:
    """In one walk of a statement: its calls to named operators, in pre-order, and every
    buffer and variable name it mentions."""
    ops: list[Any] = []
    names: set[str] = set()

    def visit(found: Any) -> bool:
        if isinstance(found, tvm.tirx.Call) and op_name(found):
            ops.append(found)
        buffer = getattr(found, "buffer", None)
        if buffer is not None and hasattr(buffer, "name"):
            names.add(str(buffer.name))
        if isinstance(found, tvm.tirx.Var):
            names.add(str(getattr(found, "name", None) or getattr(found, "name_hint", "")))
        return True

    pre_order_visit(node, visit)
    return ops, names


def lowered_gemms(func: Any) -> list[dict[str, Any]]:
    """The blocks ``tl.LowerTileOp`` made of gemm calls (named ``_gemm...`` after the
    function TileLang's emitter built), each with the instruction its intrinsics name and
    the buffer names it mentions."""
    found: list[dict[str, Any]] = []

    def visit(node: Any) -> bool:  # False: not into its children
        if isinstance(node, tvm.ir.PrimExpr):
            return False  # no expression holds a block
        if type(node).__name__ in ("SBlock", "Block") and str(node.name_hint).startswith(
                "_gemm") and "lexical_alloc_scope" in node.annotations:
            ops, names = _calls_and_names(node.body)
            found.append({**_instruction(node, ops), "names": names})
            return False
        return True

    pre_order_visit(func.body, visit)
    return found


def gemm_instructions(built: Any, lowered: Any) -> list[dict[str, Any]]:
    """Per gemm call of the module as built (source order): its operands, the instruction
    it became and in what form.

    Each lowered gemm block is traced back to the call whose A and B operands it reads
    (pipelining copies a call into the prologue or the drain; buffer names survive it).
    Where that does not decide (two calls on the same A and B), blocks and calls are
    paired in order when their counts agree; a call no block can be traced to says None.
    """
    source = gemm_calls(built)
    blocks = lowered_gemms(lowered)
    found: list[dict[str, Any]] = [{"operands": list(ops), "instruction": None, "form": None}
                                   for ops in source]

    def note(entry: dict[str, Any], block: dict[str, Any]) -> None:
        for key in ("instruction", "form"):
            if entry[key] is None:
                entry[key] = block[key]
            elif block[key] not in str(entry[key]).split("+"):
                entry[key] = f"{entry[key]}+{block[key]}"  # copies that disagree

    for i, block in enumerate(blocks):
        readers = [entry for entry in found if set(entry["operands"][:2]) <= block["names"]]
        if len(readers) != 1 and len(blocks) == len(found):
            readers = [found[i]]
        if len(readers) == 1:
            note(readers[0], block)
    return found
