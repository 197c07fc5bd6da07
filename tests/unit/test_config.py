"""Configuration: presets, upstream JSON files, derived constants, every error."""

from __future__ import annotations

import json

import pytest

import vta
from vta.config import Config

UPSTREAM_DEFAULT = {
    "TARGET": "sim", "HW_VER": "0.0.2", "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15,
    "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17,
}


def test_default_preset_derives_reference_constants():
    cfg = Config.load("default")
    # vta-reference section 1.2, default column
    assert (cfg.INP_WIDTH, cfg.WGT_WIDTH, cfg.ACC_WIDTH, cfg.OUT_WIDTH) == (8, 8, 32, 8)
    assert (cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT) == (1, 16, 16)
    assert (cfg.UOP_BUFF_SIZE, cfg.INP_BUFF_SIZE, cfg.WGT_BUFF_SIZE, cfg.ACC_BUFF_SIZE) == (
        32768, 32768, 262144, 131072)
    assert cfg.OUT_BUFF_SIZE == 32768
    assert (cfg.INP_MATRIX_WIDTH, cfg.WGT_MATRIX_WIDTH, cfg.ACC_MATRIX_WIDTH,
            cfg.OUT_MATRIX_WIDTH) == (128, 2048, 512, 128)
    assert (cfg.UOP_ELEM_BYTES, cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES, cfg.ACC_ELEM_BYTES,
            cfg.OUT_ELEM_BYTES) == (4, 16, 256, 64, 16)
    assert (cfg.UOP_BUFF_DEPTH, cfg.LOG_UOP_BUFF_DEPTH) == (8192, 13)
    assert (cfg.INP_BUFF_DEPTH, cfg.LOG_INP_BUFF_DEPTH) == (2048, 11)
    assert (cfg.WGT_BUFF_DEPTH, cfg.LOG_WGT_BUFF_DEPTH) == (1024, 10)
    assert (cfg.ACC_BUFF_DEPTH, cfg.LOG_ACC_BUFF_DEPTH) == (2048, 11)
    assert cfg.OUT_BUFF_DEPTH == 2048
    assert cfg.BUS_WIDTH == 64
    assert (cfg.INP_MAT_AXI_RATIO, cfg.WGT_MAT_AXI_RATIO, cfg.ACC_MAT_AXI_RATIO,
            cfg.OUT_MAT_AXI_RATIO) == (2, 32, 8, 2)
    assert cfg.bitstream == "1x16_i8w8a32_15_15_18_17"
    assert cfg.model == "sim_1x16_i8w8a32_15_15_18_17"


def test_presets_load_and_differ():
    tiny, aws = Config.load("tiny"), Config.load("aws")
    assert tiny.BLOCK == 4 and tiny.INP_BUFF_DEPTH == 128 and tiny.WGT_BUFF_DEPTH == 64
    assert aws.BUS_WIDTH == 512 and aws.WGT_MAT_AXI_RATIO == 4
    assert len({Config.load(p).signature for p in ("default", "tiny", "aws")}) == 3
    assert aws.diff(Config.load("default")) == ["LOG_BUS_WIDTH: 9 vs 6", "TARGET: 'aws' vs 'sim'"]


def test_upstream_json_file_loads(tmp_path):
    path = tmp_path / "vta_config.json"
    path.write_text(json.dumps(UPSTREAM_DEFAULT))
    cfg = Config.load(path)
    assert cfg == Config.load("default")  # LOG_BUS_WIDTH defaults to 6, as upstream's sim
    assert cfg.name == "vta_config"
    assert vta.Config.load(str(path)).to_dict()["LOG_BLOCK"] == 4


@pytest.mark.parametrize("key", ["LOG_INP_WIDTH", "LOG_BLOCK", "LOG_ACC_BUFF_SIZE"])
def test_missing_key_is_named(tmp_path, key):
    data = dict(UPSTREAM_DEFAULT)
    del data[key]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(vta.ConfigError, match=f"c.json: missing key '{key}'"):
        Config.load(path)


@pytest.mark.parametrize("key, value, message", [
    ("LOG_BLOCK", 9, "LOG_BLOCK must be in 1..6, not 9"),
    ("LOG_BATCH", -1, "LOG_BATCH must be in 0..4, not -1"),
    ("LOG_INP_WIDTH", 2, "LOG_INP_WIDTH must be in 3..3, not 2"),
    ("LOG_ACC_WIDTH", 4, "LOG_ACC_WIDTH must be in 5..5, not 4"),
    ("LOG_BUS_WIDTH", 10, "LOG_BUS_WIDTH must be in 6..9, not 10"),
    ("LOG_BLOCK", "4", "LOG_BLOCK must be an integer, not '4'"),
    ("HW_VER", "0.0.1", "HW_VER must be '0.0.2', not '0.0.1'"),
])
def test_out_of_range_values_are_named(key, value, message):
    with pytest.raises(vta.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Config.from_dict({**UPSTREAM_DEFAULT, key: value})


def test_buffer_too_small_for_one_element():
    # one WGT element of the default config is 256 bytes = 2**8
    with pytest.raises(vta.ConfigError, match="LOG_WGT_BUFF_SIZE = 8 gives a WGT buffer of fewer "
                       "than two 256-byte elements; it must be at least 9"):
        Config.from_dict({**UPSTREAM_DEFAULT, "LOG_WGT_BUFF_SIZE": 8})


def test_buffer_deeper_than_sram_base_field():
    with pytest.raises(vta.ConfigError,
                       match="LOG_ACC_BUFF_SIZE = 23 gives the ACC buffer a depth of 2\\*\\*17"):
        Config.from_dict({**UPSTREAM_DEFAULT, "LOG_ACC_BUFF_SIZE": 23})


def test_fields_that_no_longer_fit_the_instruction():
    # A = I = 12, W = 10: GEMM word 1 needs 2 * (12 + 12 + 10) = 68 bits, so wgt_factor_in
    # moves to bit 128 and the instruction needs 138 bits
    data = {**UPSTREAM_DEFAULT, "LOG_INP_BUFF_SIZE": 16, "LOG_ACC_BUFF_SIZE": 18}
    with pytest.raises(vta.ConfigError, match="the gemm format needs 138 bits with these buffer "
                       "depths, more than the 128-bit instruction"):
        Config.from_dict(data)


def test_fields_that_no_longer_fit_the_micro_op():
    # A = 13, I = 9, W = 10 and a 4-entry uop buffer: every instruction format fits, but the
    # micro-op needs 13 + max(13, 9) + 10 = 36 bits
    data = {**UPSTREAM_DEFAULT, "LOG_ACC_BUFF_SIZE": 19, "LOG_INP_BUFF_SIZE": 13,
            "LOG_UOP_BUFF_SIZE": 4}
    with pytest.raises(vta.ConfigError, match="the uop format needs 42 bits with these buffer "
                       "depths, more than the 32-bit micro-op"):
        Config.from_dict(data)


def test_bad_preset_name_and_bad_json(tmp_path):
    with pytest.raises(vta.ConfigError,
                       match="preset name \\(default, tiny, aws, aws32\\) or the path"):
        Config.load("huge")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(vta.ConfigError, match="bad.json: not valid JSON"):
        Config.load(bad)
    lst = tmp_path / "list.json"
    lst.write_text("[1, 2]")
    with pytest.raises(vta.ConfigError, match="must hold a JSON object, not list"):
        Config.load(lst)


def test_block_in_out_must_match_block():
    with pytest.raises(vta.ConfigError, match="LOG_BLOCK_IN must equal LOG_BLOCK \\(4\\), not 3"):
        Config.from_dict({**UPSTREAM_DEFAULT, "LOG_BLOCK_IN": 3})
    assert Config.from_dict({**UPSTREAM_DEFAULT, "LOG_BLOCK_IN": 4, "LOG_BLOCK_OUT": 4}).BLOCK == 16


def test_unknown_key_is_refused_naming_the_closest_valid_key(tmp_path):
    path = tmp_path / "typo.json"
    path.write_text(json.dumps({**UPSTREAM_DEFAULT, "LOG_BUS_WIDHT": 9}))
    with pytest.raises(vta.ConfigError, match=rf"{path}: unknown key 'LOG_BUS_WIDHT'; did you "
                                              r"mean 'LOG_BUS_WIDTH'\?"):
        Config.load(path)
    with pytest.raises(vta.ConfigError, match=r"unknown key 'COLOR'; valid keys are LOG_INP_WIDTH"):
        Config.from_dict({**UPSTREAM_DEFAULT, "COLOR": "red"})
    # keys of older upstream files are accepted (and mean nothing)
    assert Config.from_dict({**UPSTREAM_DEFAULT, "HW_FREQ": 100}) == Config.load("default")


def test_vta_config_json_round_trips_and_edited_derived_keys_are_refused(tmp_path):
    from click.testing import CliRunner

    from vta.cli import main

    out = CliRunner().invoke(main, ["config", "tiny", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    assert Config.load(path) == Config.load("tiny")
    for key, value, base in (("BUS_WIDTH", 512, 64), ("BLOCK_IN", 16, 4),
                             ("INP_BUFF_DEPTH", 4096, 128), ("signature", "0x12345678",
                                                             f"0x{Config.load('tiny').signature:08x}")):
        path.write_text(json.dumps({**data, key: value}))
        with pytest.raises(vta.ConfigError, match=(
                rf"{key} is {value!r}, but the base keys give {base!r}; derived keys are "
                r"computed, not read: change the LOG_\* keys instead")):
            Config.load(path)
