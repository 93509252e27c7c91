"""CRC-32C from the crc32c wheel's extension module, loaded without its package's import-time work."""
from __future__ import annotations

import importlib.machinery as _machinery
import os


def _load():
    """The extension's ``crc32c`` function, or the package's (the same function) if it cannot be
    loaded on its own: the package's ``__init__`` looks its version up through importlib.metadata
    and imports its command-line tool (argparse), tens of milliseconds a ``kfx`` start pays for
    nothing."""
    try:
        spec = _machinery.PathFinder.find_spec("crc32c")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for suffix in _machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_crc32c" + suffix)
                if os.path.isfile(path):
                    loader = _machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    ext = _machinery.ModuleSpec("crc32c._crc32c", loader, origin=path)
                    module = loader.create_module(ext)
                    loader.exec_module(module)
                    return module.crc32c
    except (ImportError, OSError, AttributeError):
        pass
    from crc32c import crc32c as fn
    return fn


#: ``crc32c(data, value=0) -> int``: Kafka's CRC-32C (Castagnoli), hardware-accelerated where the CPU allows
crc32c = _load()
