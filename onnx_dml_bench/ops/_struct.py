"""An operator's DirectML struct, declared once: ``Operator.layout(desc)`` lists the fields of its
``DML_*_OPERATOR_DESC`` in directml.h order, filled from a descriptor, and ``Operator.dml_type``
names its ``DML_OPERATOR_TYPE``. Everything that writes the struct down reads that list: the C++
text and the DxDispatch model of a bundle (``bundle/dxdispatch.py``), the direct harness's request line
and its output slots (``dml/direct/runner.py``; ``harness.c`` packs any struct from it) and the
struct text of the HTML report (``report/data.py``). Operator modules build the fields with the
constructors below (``Field`` itself is re-exported by ``ops/base.py`` for the writers); MAX_POOLING2's
layout, for example::

    out = self.output_shape(desc)
    [Input("InputTensor", "X", desc.InputSizes, desc.DataType),
     Output("OutputTensor", "Y", out, desc.DataType),
     Output("OutputIndicesTensor", "Indices", out, desc.OutputIndicesDataType, optional=True),
     Uint("DimensionCount", desc.DimensionCount),
     Uints("Strides", desc.Strides), ...]

Field kinds, their C type, and how the harness packs them (x64, natural alignment: each member at
the next multiple of its alignment, as a C compiler lays out the struct):

========  ========================  ==================================================  =====================
kind      C type                    value (``Field.value``)                             size / alignment
========  ========================  ==================================================  =====================
tensor    const DML_TENSOR_DESC*    none: ``role`` (input or output), ``tensor`` (the   8 / 8 (a pointer to a
                                    case's input or output it binds; None for an        buffer tensor desc,
                                    optional tensor left out: a null pointer),          null when left out)
                                    ``sizes`` and ``dtype`` (its own data type)
uint      UINT                      int in [0, 2**32)                                   4 / 4
int       INT                       int in [-2**31, 2**31)                              4 / 4
uints     const UINT*               tuple of UINTs (DimensionCount of them)             8 / 8 (pointer)
ints      const INT*                tuple of INTs                                       8 / 8 (pointer)
float     FLOAT                     float (32-bit in the struct)                        4 / 4
bool      BOOL                      bool (TRUE = 1, FALSE = 0)                          4 / 4
size2d    DML_SIZE_2D               (Width, Height)                                     8 / 4 (two UINTs)
enum      the enum's type name      the full constant name, e.g.                        4 / 4
          (``Field.enum``)          DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW, and its
                                    value (``Field.number``)
========  ========================  ==================================================  =====================

Inputs bind, in the order they appear among the struct's input tensors, to the operator's input
slots; outputs likewise (an optional tensor left out keeps its slot, bound to nothing).

What directml.h says of an operator is declared in the operator's own file, as its
``Operator.directml_h`` (:class:`DirectmlH`): the struct's members as the header writes them, and
the numbers of its ``DML_OPERATOR_TYPE`` and of the enum constants its struct uses (the harness gets
numbers, not names; an ``Enum`` field carries its number). tests/contract/test_struct_layout.py
collects those declarations from the registry: each layout against its struct text, the packing
against gcc's layout of those texts, and the numbers of operators that share an enum against each
other.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DirectmlH:
    """What directml.h (DML_TARGET_VERSION 0x6400) says of one operator, written down in the
    operator's own file: ``struct``, the members of its ``DML_*_OPERATOR_DESC`` as the header
    declares them (one ``<C type> <name>;`` per line, ``_Maybenull_`` kept), and ``numbers``, by
    enum type, the values of its ``DML_OPERATOR_TYPE`` and of the enum constants its struct uses,
    e.g. ``{"DML_OPERATOR_TYPE": {"DML_OPERATOR_SPACE_TO_DEPTH1": 114},
    "DML_DEPTH_SPACE_ORDER": {"DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW": 0, ...}}``."""
    struct: str
    numbers: dict

    def number(self, enum: str, constant: str) -> int:
        """The value of ``constant`` of enum type ``enum``; KeyError naming what to add."""
        try:
            return int(self.numbers[enum][constant])
        except KeyError:
            raise KeyError(f"{constant} ({enum}) has no value in the operator's directml_h: add its line from "
                           "directml.h") from None

    def members(self) -> list[tuple[str, str, bool]]:
        """(C type, name, _Maybenull_) of each member of ``struct``, in order."""
        out = []
        for line in self.struct.strip().splitlines():
            m = re.fullmatch(r"\s*(_Maybenull_ )?(.+?) (\w+);\s*", line)
            if m is None:
                raise ValueError(f"not a member declaration: {line.strip()!r}")
            out.append((m.group(2), m.group(3), bool(m.group(1))))
        return out


#: kind -> (C type, size in bytes, alignment) in the x64 struct; an enum's C type is its own name
KINDS: dict[str, tuple[str, int, int]] = {
    "tensor": ("const DML_TENSOR_DESC*", 8, 8),
    "uint": ("UINT", 4, 4),
    "int": ("INT", 4, 4),
    "uints": ("const UINT*", 8, 8),
    "ints": ("const INT*", 8, 8),
    "float": ("FLOAT", 4, 4),
    "bool": ("BOOL", 4, 4),
    "size2d": ("DML_SIZE_2D", 8, 4),
    "enum": ("", 4, 4),
}
ROLES = ("input", "output")


@dataclass(frozen=True)
class Field:
    """One member of a ``DML_*_OPERATOR_DESC``, in directml.h order (kinds: see the module text)."""
    name: str                           # the member's name in directml.h
    kind: str
    value: Any = None                   # scalar kinds: the value
    role: str = ""                      # tensor: "input" | "output"
    tensor: str | None = None           # tensor: the case's input/output it binds; None: left out
    sizes: tuple[int, ...] = ()         # tensor: DML sizes
    dtype: str = ""                     # tensor: its DML data type ("FLOAT32", "UINT32", ...)
    optional: bool = False              # tensor: _Maybenull_ in directml.h
    enum: str = ""                      # enum: the C enum type, e.g. "DML_DEPTH_SPACE_ORDER"
    number: int | None = None           # enum: the constant's value in directml.h
    #: tensor: the sizes as the descriptor writes them where it allows a shorthand (ROI pooling's
    #: [NumROIs, 5] for {1, 1, NumROIs, 5}); the report's struct text shows these
    as_written: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"field {self.name}: unknown kind {self.kind!r} (kinds: {', '.join(KINDS)})")
        if self.kind == "tensor" and self.role not in ROLES:
            raise ValueError(f"field {self.name}: a tensor's role is input or output, got {self.role!r}")
        if self.kind == "enum" and not (self.enum and isinstance(self.value, str) and self.value.startswith(self.enum)):
            raise ValueError(f"field {self.name}: an enum field names its C type and a constant of it, "
                             f"got {self.enum!r} / {self.value!r}")
        if self.kind == "enum" and not isinstance(self.number, int):
            raise ValueError(f"field {self.name}: an enum field carries the number of its constant {self.value!r}")

    @property
    def ctype(self) -> str:
        """The member's C type in directml.h."""
        return self.enum if self.kind == "enum" else KINDS[self.kind][0]

    @property
    def present(self) -> bool:
        """False only for an optional tensor left out (a null pointer)."""
        return self.kind != "tensor" or self.tensor is not None

# ------------------------------------------------------------------------------------------------
# Constructors, one per kind (what an operator's layout() is written with)
# ------------------------------------------------------------------------------------------------

def _tensor(role, name, tensor, sizes, dtype, optional, as_written) -> Field:
    left_out = dtype is None
    if left_out and not optional:
        raise ValueError(f"field {name}: only an optional tensor may be left out (no data type given)")
    return Field(name, "tensor", role=role, tensor=None if left_out else tensor,
                 sizes=tuple(int(s) for s in sizes), dtype=dtype or "", optional=optional,
                 as_written=None if as_written is None else tuple(int(s) for s in as_written))


def Input(name: str, tensor: str, sizes, dtype: str | None, *, optional: bool = False, as_written=None) -> Field:
    """An input tensor bound to the case's input ``tensor``; ``dtype`` None leaves an optional one out."""
    return _tensor("input", name, tensor, sizes, dtype, optional, as_written)


def Output(name: str, tensor: str, sizes, dtype: str | None, *, optional: bool = False) -> Field:
    """An output tensor bound to the case's output ``tensor``; ``dtype`` None leaves an optional one out."""
    return _tensor("output", name, tensor, sizes, dtype, optional, None)


def Uint(name: str, value: int) -> Field:
    return Field(name, "uint", int(value))


def Int(name: str, value: int) -> Field:
    return Field(name, "int", int(value))


def Uints(name: str, values) -> Field:
    """A pointer to an array of UINTs (e.g. DimensionCount window sizes)."""
    return Field(name, "uints", tuple(int(v) for v in values))


def Ints(name: str, values) -> Field:
    """A pointer to an array of INTs."""
    return Field(name, "ints", tuple(int(v) for v in values))


def Float(name: str, value: float) -> Field:
    return Field(name, "float", float(value))


def Bool(name: str, value: bool) -> Field:
    return Field(name, "bool", bool(value))


def Size2D(name: str, width: int, height: int) -> Field:
    """A DML_SIZE_2D (members Width, Height)."""
    return Field(name, "size2d", (int(width), int(height)))


def Enum(name: str, enum: str, constant: str, directml_h: DirectmlH) -> Field:
    """A member of C enum type ``enum`` (e.g. DML_DEPTH_SPACE_ORDER) set to ``constant``, with its
    number from the operator's ``directml_h``; the short form (DEPTH_COLUMN_ROW) is completed to the
    full constant name."""
    prefix = enum + "_"
    full = constant if constant.startswith(prefix) else prefix + constant
    return Field(name, "enum", full, enum=enum, number=directml_h.number(enum, full))


# ------------------------------------------------------------------------------------------------
# The struct in memory
# ------------------------------------------------------------------------------------------------

def offsets(fields: list[Field]) -> tuple[list[int], int]:
    """Each member's byte offset and the struct's size, laid out as a C compiler does on x64
    (natural alignment) — what the harness's packer does, written in Python."""
    out, end, widest = [], 0, 1
    for f in fields:
        _, size, align = KINDS[f.kind]
        end = (end + align - 1) // align * align
        out.append(end)
        end += size
        widest = max(widest, align)
    return out, (end + widest - 1) // widest * widest


def declaration(struct_name: str, fields: list[Field]) -> str:
    """The struct's declaration as directml.h writes it (C)."""
    lines = [f"struct {struct_name} {{"] + [f"    {f.ctype} {f.name};" for f in fields] + ["};"]
    return "\n".join(lines)
