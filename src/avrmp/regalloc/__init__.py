"""Register allocation: virtual registers (vprogram) assigned to physical ones with spills,
reloads and register pairs (allocator), the signed arm's two copies (signed_arm), and the fixed
register pools of hand-allocated kernels (pool)."""
