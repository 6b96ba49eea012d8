"""The shared core, what every stage and engine uses: element types and numerics, limits,
errors, source files and diagnostics, fault records, progress positions, random numbers,
safe file writes and the cycle collector's pauses."""
