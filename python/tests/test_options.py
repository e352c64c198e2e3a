# SPDX-License-Identifier: Apache-2.0
"""Backend options from Python route through the same schema as `staticlm export --option`: the
seed's cases (valid HTP and GPU specs, an unknown name with its suggestion, a wrong type, an option
of another backend type, conflicting options, LPAI's SDK gate, an unknown SDK version) and the skip
sets reaching the partitioner."""
import pytest

import staticlm


def test_backends_and_their_schemas_are_python_data():
    names = [b["name"] for b in staticlm.backends()]
    assert names == ["cpu", "qnn"]
    options = {o["name"]: o for o in staticlm.backend_options("qnn")}
    assert options["soc_model"]["required"] is True
    assert "SM8650" in [v["name"] for v in options["soc_model"]["allowed"]]
    assert options["use_fp16"]["type"] == "bool" and options["use_fp16"]["default"] is True
    assert options["use_fp16"]["applies_to"] == ["htp"]
    backend = options["backend"]
    assert [v["name"] for v in backend["allowed"]] == ["htp", "gpu", "lpai"]
    assert [v["min_sdk_version"] for v in backend["allowed"]][2].startswith("2.39")
    assert options["online_prepare"]["constraints"][0]["kind"] == "conflicts"
    assert options["skip_node_op_set"]["route"] == "partitioner"
    cpu = {o["name"]: o for o in staticlm.backend_options("cpu")}
    assert cpu["group_size"]["min"] == 16 and cpu["group_size"]["max"] == 128
    with pytest.raises(staticlm.OptionError) as refused:
        staticlm.backend_options("qnnn")
    assert refused.value.suggestion == "qnn"


def test_a_valid_htp_spec_routes_to_the_htp_builder(qnn_sdk):
    qnn_sdk("2.37")
    p = staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8650", "htp_performance_mode": "high_performance",
                                                  "use_weight_sharing": True, "profile_level": "detailed"})
    assert p.backend == "qnn"
    assert p.settings["backend"] == "htp"
    assert p.compile_specs["htp"]["htp_performance_mode"] == "high_performance"
    assert p.compile_specs["htp"]["use_weight_sharing"] is True
    assert p.compile_specs["common"]["profile_level"] == "detailed"
    assert "gpu" not in p.compile_specs
    assert sorted(p.given) == ["htp_performance_mode", "profile_level", "soc_model", "use_weight_sharing"]
    assert "htp_performance_mode=high_performance (given)" in repr(p)


def test_a_valid_gpu_spec_routes_to_the_gpu_builder(qnn_sdk):
    qnn_sdk("2.37")
    p = staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8550", "backend": "gpu", "precision": "fp16",
                                                  "use_queue_recording": False, "use_weight_sharing": True})
    assert p.compile_specs["gpu"]["precision"] == "fp16"
    assert p.compile_specs["gpu"]["use_weight_sharing"] is True
    assert "htp" not in p.compile_specs


def test_unknown_names_raise_option_error_with_a_suggestion(qnn_sdk):
    qnn_sdk("2.37")
    with pytest.raises(staticlm.OptionError) as refused:
        staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8650", "use_fp61": True})
    assert "unknown option 'use_fp61' for backend 'qnn' (did you mean 'use_fp16'?)" in str(refused.value)
    assert refused.value.suggestion == "use_fp16"
    assert refused.value.code == "InvalidArgument"
    assert isinstance(refused.value, ValueError) and isinstance(refused.value, staticlm.Error)


def test_wrong_types_raise_with_the_cpp_message(qnn_sdk):
    qnn_sdk("2.39")
    with pytest.raises(staticlm.OptionError, match=r"option 'use_fp16' \(options\): expected a bool \(true or "
                                                   r"false\), found JSON string \"true\""):
        staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8650", "use_fp16": "true"})
    with pytest.raises(staticlm.OptionError, match="option 'fps'"):
        staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8850", "backend": "lpai", "fps": 2.5})
    with pytest.raises(staticlm.OptionError, match="option 'skip_mutable_buffer': expected a bool, int, float, str"):
        staticlm.Partitioner.from_options("cpu", {"skip_mutable_buffer": None})


def test_an_option_of_another_backend_type_is_refused(qnn_sdk):
    qnn_sdk("2.37")
    with pytest.raises(staticlm.OptionError, match="option 'use_fp16' applies to backend htp, not backend gpu"):
        staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8650", "backend": "gpu", "use_fp16": True})


def test_conflicting_options_are_refused(qnn_sdk):
    qnn_sdk("2.39.0.250925")
    with pytest.raises(staticlm.OptionError, match="option 'online_prepare' conflicts with 'use_multi_contexts'"):
        staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8650", "online_prepare": True,
                                                  "use_multi_contexts": True})


def test_lpai_needs_sdk_2_39(qnn_sdk):
    lpai = {"soc_model": "SM8850", "backend": "lpai", "fps": 30}
    qnn_sdk("2.37.0.250724")
    with pytest.raises(staticlm.OptionError) as refused:
        staticlm.Partitioner.from_options("qnn", lpai)
    assert refused.value.code == "FailedPrecondition"
    assert "option 'backend' = 'lpai' needs QNN SDK >= 2.39.0, found 2.37.0.250724 (from QNN_SDK_VERSION)" in str(
        refused.value)
    qnn_sdk("2.39")
    p = staticlm.Partitioner.from_options("qnn", lpai)
    assert p.compile_specs["lpai"]["fps"] == 30


def test_an_unknown_sdk_version_is_said_so(qnn_sdk):
    qnn_sdk(None)
    with pytest.raises(staticlm.OptionError, match="QNN SDK version unknown"):
        staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8850", "backend": "lpai"})
    staticlm.Partitioner.from_options("qnn", {"soc_model": "SM8650"})  # no version gate, no version needed


def test_skip_sets_reach_the_partitioner():
    p = staticlm.Partitioner.from_options("cpu", {"skip_node_op_set": ["rope", "attention"],
                                                  "skip_node_id_set": ("prefill:0",), "skip_mutable_buffer": True})
    assert p.partitioner_options == {"skip_node_id_set": ["prefill:0"], "skip_node_op_set": ["attention", "rope"],
                                     "skip_mutable_buffer": True}
    assert "skip_node_op_set" not in p.compile_specs.get("cpu", {})
    with pytest.raises(staticlm.OptionError, match="matmul"):
        staticlm.Partitioner.from_options("cpu", {"skip_node_op_set": ["matmul"]})
