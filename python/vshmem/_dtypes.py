"""Element types and reduction operations: the codes the extension uses (python/src/bindings_dtype.hpp)."""

_NAMES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "float16", "bfloat16"]
CODE = {name: i for i, name in enumerate(_NAMES)}
SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
        "uint64": 8, "float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "and": 4, "or": 5, "xor": 6}


_CACHE = {}


def name_of(dtype):
    """The canonical name of a NumPy dtype, a torch dtype or a string ('float32', 'bfloat16')."""
    try:
        return _CACHE[dtype]
    except (KeyError, TypeError):
        pass
    name = _name_of(dtype)
    try:
        _CACHE[dtype] = name
    except TypeError:       # not hashable
        pass
    return name


def _name_of(dtype):
    mod = type(dtype).__module__
    if mod.startswith("torch"):
        text = str(dtype).replace("torch.", "")
        return {"float": "float32", "double": "float64", "half": "float16", "int": "int32",
                "long": "int64", "short": "int16"}.get(text, text)
    if isinstance(dtype, str) and dtype in SIZE:
        return dtype
    import numpy as np
    return np.dtype(dtype).name
