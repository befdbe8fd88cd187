"""Data only: the workbook layout (``sheets.toml``). Loaded with importlib.resources."""
