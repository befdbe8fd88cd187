"""Packaging guards: every package folder is listed in pyproject, and only the name
``perfcmp`` is importable (never the folder names ``compare`` / ``readers``)."""

import importlib
import pkgutil
import sys
import tomllib
from pathlib import Path

import perfcmp

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"compare": "perfcmp", "readers": "perfcmp.readers", "report_templates": "perfcmp.report_templates"}


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *rel)))
    assert found == listed


def test_only_perfcmp_is_imported():
    for module in pkgutil.walk_packages(perfcmp.__path__, "perfcmp."):
        if module.name != "perfcmp.__main__":  # running it is the CLI
            importlib.import_module(module.name)
    importlib.import_module("perfcmp.readers.detect")
    assert "compare" not in sys.modules and "readers" not in sys.modules


def test_data_files_ship_with_the_package():
    from importlib import resources

    assert resources.files("perfcmp").joinpath("kernel_categories.toml").is_file()
    assert resources.files("perfcmp.report_templates").joinpath("sheets.toml").is_file()


def test_metadata_names_the_licence_and_classifies_the_project():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "MIT"}
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    assert "License :: OSI Approved :: MIT License" in project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]  # requires-python's floor


def test_plain_pytest_leaves_the_slow_tests_to_ci():
    """The README's `pytest` deselects `slow` and `fuzz`; .ci/run runs both selections."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not slow and not fuzz'" in config["addopts"]
    assert {m.split(":")[0] for m in config["markers"]} >= {"slow", "fuzz", "signals_self"}
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert lines[-2:] == ["pytest", "pytest -m slow"]
    assert any("apt-get install" in line and "chromium" in line for line in lines)
