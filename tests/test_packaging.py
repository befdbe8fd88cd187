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
