"""How the detail tables are built from the two sides (operators, memory, modules, communication,
APIs and kernels); each dimension of ``perfcmp.dimensions`` builds its tables with these."""
