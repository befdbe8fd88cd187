"""Detail comparisons: operators, memory, modules, communication, APIs and kernels."""
