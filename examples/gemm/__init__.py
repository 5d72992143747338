"""Tensor-core GEMM examples (issue #18): ``mma_gemm`` is the sm_80 path (cp.async multistage
pipeline, ldmatrix, mma.sync)."""
