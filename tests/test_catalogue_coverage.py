"""Every catalogue rule that applies to Python has a test named after its rule ID (spec/catalogue.json)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = json.loads((ROOT / "spec" / "catalogue.json").read_text(encoding="utf-8"))
SHARED_CATALOGUE = ROOT.parent / "shared" / "reference" / "seed-behavior.md"


def _test_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                names.add(node.name)
    return names


def test_every_applicable_rule_has_a_test_named_after_it() -> None:
    names = _test_names()
    missing = []
    for rule in CATALOGUE["rules"]:
        if not rule["applies"]:
            assert rule.get("reason"), f"{rule['id']} does not apply but gives no reason"
            continue
        token = rule["id"].replace("-", "_")
        if not any(re.search(rf"(^|_){token}(_|$)", name) for name in names):
            missing.append(rule["id"])
    assert missing == [], f"rules without a test named after them: {missing}"


def test_the_catalogue_list_is_complete_when_the_catalogue_is_at_hand() -> None:
    listed = {rule["id"] for rule in CATALOGUE["rules"]}
    if not SHARED_CATALOGUE.is_file():  # a checkout without the shared reference: nothing to compare
        assert len(listed) == 103
        return
    ids = set(re.findall(r"\*\*([A-Z]+-[0-9]+)", SHARED_CATALOGUE.read_text(encoding="utf-8")))
    assert ids == listed


def test_every_kept_or_fixed_defect_is_accounted_for() -> None:
    deviations = {d["id"] for d in json.loads((ROOT / "spec" / "deviations.json").read_text())["deviations"]}
    for defect in CATALOGUE["defects"]:
        assert defect["status"] in {"fixed", "kept", "not-observable", "not-applicable"}
        if defect["status"] == "fixed":
            assert set(defect["deviations"]) <= deviations
    for rule in CATALOGUE["rules"]:
        assert set(rule.get("deviations", [])) <= deviations, rule["id"]
