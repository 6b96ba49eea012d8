"""Reference values in the order the lanes of an MMA fragment combine them."""
import numpy as np


def row_sums_in_lane_order(c: np.ndarray) -> np.ndarray:
    """Row sums as the lanes form them: each of a row's four lanes adds its columns
    (2t, 2t + 1, 8 + 2t, 9 + 2t) in f32 from 0, then lanes combine (xor 2, then xor 1)."""
    out = np.zeros(len(c), np.float32)
    for r in range(len(c)):
        part = []
        for t in range(4):
            s = np.float32(0)
            for j in (2 * t, 2 * t + 1, 8 + 2 * t, 9 + 2 * t):
                s = np.float32(s + c[r, j])
            part.append(s)
        x = [np.float32(part[t] + part[t ^ 2]) for t in range(4)]
        out[r] = np.float32(x[1] + x[1 ^ 1])
    return out
