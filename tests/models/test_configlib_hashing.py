"""configlib.hashing: one canonical text per config, and its SHA-256. The known digests are
hashlib over text written out in the test, plus one published constant."""

from __future__ import annotations

import hashlib

from models.configlib import canonical_json, parse_layer, sha256_hex


def test_canonical_text_of_a_tiny_config():
    tiny = {"b": 1, "a": [1, 2], "c": {"y": "z", "x": 0.5}}
    text = '{"a":[1,2],"b":1,"c":{"x":0.5,"y":"z"}}'
    assert canonical_json(tiny) == text
    assert sha256_hex(tiny) == hashlib.sha256(text.encode()).hexdigest()


def test_the_empty_config_has_the_published_digest_of_two_braces():
    assert canonical_json({}) == "{}"
    assert sha256_hex({}) == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


def test_non_ascii_is_escaped_so_old_hashes_stay_valid():
    # json.dumps' default: a change to ensure_ascii=False would move every stored hash with a
    # non-ASCII string in it.
    assert canonical_json({"name": "é"}) == '{"name":"\\u00e9"}'


def test_hash_is_stable_under_key_order_whitespace_and_format():
    toml_text = '[optim]\nlr = 1.5e-4\nwarmup_steps = 1000\n\n[train]\nseed = 17\n'
    json_text = '{\n  "train": {"seed": 17},\n    "optim": {"warmup_steps": 1000,   "lr": 0.00015}\n}'
    a, b = parse_layer("x", toml_text).data, parse_layer("x", json_text).data
    assert sha256_hex(a) == sha256_hex(b)
    assert sha256_hex({"a": {"x": 1, "y": 2}, "b": 3}) == sha256_hex({"b": 3, "a": {"y": 2, "x": 1}})


def test_hash_is_sensitive_to_value_type_and_list_order():
    base = {"warmup_steps": 1000, "sources": ["web", "code"]}
    variants = [
        {"warmup_steps": 1000.0, "sources": ["web", "code"]},  # "1000.0" is other bytes than "1000"
        {"warmup_steps": "1000", "sources": ["web", "code"]},
        {"warmup_steps": 1000, "sources": ["code", "web"]},
        {"warmup_steps": 1001, "sources": ["web", "code"]},
        {"warmup_steps": 1000, "sources": ["web", "code"], "extra": None},
    ]
    hashes = {sha256_hex(base)} | {sha256_hex(x) for x in variants}
    assert len(hashes) == 1 + len(variants)


def test_one_character_gives_an_unrelated_digest():
    a = sha256_hex({"snapshot": "web-code-2025-06-02"})
    b = sha256_hex({"snapshot": "web-code-2025-06-03"})
    # 64 hex digits, each equal by chance with probability 1/16: about 4 agree, never 24
    assert sum(x != y for x, y in zip(a, b)) > 40
