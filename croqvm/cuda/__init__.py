"""The CUDA path (ARCHITECTURE.md "The CUDA path"): the runtime every generated kernel
calls (``rt/``), the nvcc and host-compiler builds with their cache (``compile``), the
cuda-cpu device that runs the generated code on the CPU (``cpu``) and the GPU device
(``driver``)."""
