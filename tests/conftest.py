import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Triton kernels run in its interpreter on the CPU (the flag is read when triton is first imported, which any
# test may do); a GPU run of the suite sets TRITON_INTERPRET=0 to compile them
os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one torch thread per pytest-xdist worker: workers that each spin a thread pool over every core
    # oversubscribe it (the subprocesses a test starts inherit this too)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
