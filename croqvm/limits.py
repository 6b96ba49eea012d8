"""Hardware limits every stage enforces: the one place each number is written.

The checker reports them statically when sizes are known, the verifier rejects modules
that break them, and the engines check what is only known at launch.
"""

MAX_BLOCK_SIZE = 1024              # lanes per block (LANGUAGE.md §6.3.6)
TOO_MANY_THREADS = ("Total physical threads per block (thread x group x group-4 dims) must "
                    f"not exceed {MAX_BLOCK_SIZE}.")
MAX_SHARED_BYTES = 228 * 1024      # shared memory per block: the largest configurable (sm_90)
MAX_REGISTERS = 65536              # registers declared by one host program or kernel
