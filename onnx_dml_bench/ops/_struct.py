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
          (``Field.enum``)          DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW
========  ========================  ==================================================  =====================

Inputs bind, in the order they appear among the struct's input tensors, to the operator's input
slots; outputs likewise (an optional tensor left out keeps its slot, bound to nothing). The numeric
value of every DirectML enum constant a struct uses lives in :data:`DIRECTML_H`, the one table of
them (the harness gets numbers, not names).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Values of the DirectML enum constants the operators' structs use, as directml.h defines them
#: (DML_TARGET_VERSION 0x6400), by enum type. The one place these numbers are written: a new
#: operator adds its DML_OPERATOR_TYPE line here (and the constants of an enum type its struct
#: uses that is not here yet).
DIRECTML_H: dict[str, dict[str, int]] = {
    "DML_OPERATOR_TYPE": {
        "DML_OPERATOR_ROI_POOLING": 59,
        "DML_OPERATOR_MAX_POOLING2": 110,
        "DML_OPERATOR_DEPTH_TO_SPACE1": 113,
        "DML_OPERATOR_SPACE_TO_DEPTH1": 114,
        "DML_OPERATOR_AVERAGE_POOLING1": 166,
    },
    "DML_DEPTH_SPACE_ORDER": {
        "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW": 0,
        "DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH": 1,
    },
}

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

    @property
    def ctype(self) -> str:
        """The member's C type in directml.h."""
        return self.enum if self.kind == "enum" else KINDS[self.kind][0]

    @property
    def present(self) -> bool:
        """False only for an optional tensor left out (a null pointer)."""
        return self.kind != "tensor" or self.tensor is not None

    @property
    def number(self) -> int:
        """An enum field's value as directml.h numbers it."""
        return enum_value(self.enum, self.value)


def enum_value(enum: str, constant: str) -> int:
    """The number of a DirectML enum constant (from :data:`DIRECTML_H`)."""
    try:
        return DIRECTML_H[enum][constant]
    except KeyError:
        raise KeyError(f"{constant} ({enum}) has no value in DIRECTML_H (ops/_struct.py): add its line from "
                       "directml.h") from None


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


def Enum(name: str, enum: str, constant: str) -> Field:
    """A member of C enum type ``enum`` (e.g. DML_DEPTH_SPACE_ORDER) set to ``constant``; the short
    form (DEPTH_COLUMN_ROW) is completed to the full constant name."""
    prefix = enum + "_"
    full = constant if constant.startswith(prefix) else prefix + constant
    return Field(name, "enum", full, enum=enum)


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
