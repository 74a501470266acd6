"""The block-unit page: the chapter's 320 KiB per token and 5 MiB block, recomputed from the seed set."""


def test_kv_per_token_is_320_kib(seed_scenario):
    # 2 (K,V) x 80 layers x 8 KV heads x 128 head_dim x 2 B (bf16) = 327,680 B = 320 KiB
    assert seed_scenario.kv_bytes_per_token == 327_680
    assert seed_scenario.kv_bytes_per_token / 1024 == 320


def test_block_is_5_mib(seed_scenario):
    # 16 tokens x 327,680 B = 5,242,880 B = 5,120 KiB = 5.00 MiB
    assert seed_scenario.block_bytes == 5_242_880
    assert seed_scenario.block_bytes / 2**20 == 5.0
