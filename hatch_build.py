"""Hatch build hook: a wheel that carries the compiled machine (off by default).

::

    HATCH_BUILD_HOOK_ENABLE_CUSTOM=true python -m pip wheel --no-deps --no-build-isolation -w dist .

runs ``python -m tool_call_closure.machine.build_compiled`` on this source tree (unless a fresh build is there)
(mypy, which includes mypyc, setuptools and a C compiler are needed: the
development install has the first two) and adds the extensions and their
``build.json`` to the wheel, which is then tagged for this interpreter and
platform.  Without the variable the wheel is pure Python, as always; with it,
the pure modules are still in the wheel and run whenever the compiled build
is stale or cannot be imported (``tool_call_closure._compiled``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

COMPILED = "src/tool_call_closure/_compiled"


class CompiledMachineHook(BuildHookInterface):  # type: ignore[type-arg]  # (generic in its builder config)
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        environment = {**os.environ, "PYTHONPATH": str(root / "src")}
        command = [sys.executable, "-m", "tool_call_closure.machine.build_compiled"]
        fresh = subprocess.run([*command, "--check"], cwd=root, env=environment, capture_output=True, check=False)
        if fresh.returncode != 0:  # a fresh build of these very sources is reused as it is
            subprocess.run(command, cwd=root, env=environment, check=True)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["artifacts"] += [f"{COMPILED}/*.so", f"{COMPILED}/*.pyd", f"{COMPILED}/build.json"]
