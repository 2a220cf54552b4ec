"""The named DirectML stacks (``setup dml --stack``, ``run --ep dml|dml-direct --ep-option stack=``):
the pieces that need no Wine — source patches of the wine10-sm6 build, option parsing, the stack a
run selects, the launchers and what records say about the stack."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import onnx_dml_bench.dml
from onnx_dml_bench.dml import probe, select
from onnx_dml_bench.dml.install import sm6 as install_sm6
from onnx_dml_bench.dml.wine import root, stackinfo
from onnx_dml_bench.dml.wine.stackinfo import StackError, StackInfo

# d3d12_device_EnumerateMetaCommands as vkd3d 1.14 (Wine 10.0) ships it
DEVICE_C = """\
static HRESULT STDMETHODCALLTYPE d3d12_device_CheckDriverMatchingIdentifier(ID3D12Device9 *iface)
{
    return E_NOTIMPL;
}

static HRESULT STDMETHODCALLTYPE d3d12_device_EnumerateMetaCommands(ID3D12Device9 *iface,
        UINT *num_meta_commands, D3D12_META_COMMAND_DESC *command_desc)
{
    FIXME("iface %p, num_meta_commands %p, command_desc %p stub!\\n", iface,
            num_meta_commands, command_desc);

    return E_NOTIMPL;
}

static HRESULT STDMETHODCALLTYPE d3d12_device_EnumerateMetaCommandParameters(ID3D12Device9 *iface,
        REFGUID command_id, D3D12_META_COMMAND_PARAMETER_STAGE stage)
{
    return E_NOTIMPL;
}
"""

MAKEFILE_IN = """\
EXTLIB    = libvkd3d.a
EXTRAINCL = $(VKD3D_PE_CFLAGS) -I$(srcdir)/include/private
EXTRADEFS = \\
\t-DWINE_NO_NAMELESS_EXTENSION \\
\t-DLIBVKD3D_SOURCE \\
\t-DLIBVKD3D_SHADER_SOURCE \\
\t-DLIBVKD3D_UTILS_SOURCE

SOURCES = \\
\tlibs/vkd3d-common/blob.c
"""


def test_enumerate_meta_commands_reports_none_with_s_ok():
    out = install_sm6.patch_enumerate_meta_commands(DEVICE_C)
    body = out.split("d3d12_device_EnumerateMetaCommands(", 1)[1].split("\n}", 1)[0]
    assert "E_NOTIMPL" not in body and "FIXME" not in body
    assert "*num_meta_commands = 0;" in body and "return S_OK;" in body
    # a NULL descriptions pointer is the count query: still S_OK; only a NULL count is refused
    assert "if (!num_meta_commands)" in body and "if (!command_desc)" not in body
    # the functions around it are untouched
    assert out.count("return E_NOTIMPL;") == 2
    assert install_sm6.patch_enumerate_meta_commands(out) == out          # idempotent


def test_enumerate_meta_commands_missing_is_an_error():
    with pytest.raises(StackError, match="EnumerateMetaCommands not found"):
        install_sm6.patch_enumerate_meta_commands("int main(void) { return 0; }\n")


def test_dxil_define_added_to_the_vkd3d_build():
    out = install_sm6.patch_vkd3d_makefile(MAKEFILE_IN)
    defs = out.split("EXTRADEFS", 1)[1].split("\n\n", 1)[0]
    assert "-DVKD3D_SHADER_UNSUPPORTED_DXIL" in defs and "-DLIBVKD3D_UTILS_SOURCE \\\n" in defs
    assert out.endswith(MAKEFILE_IN.split("\n\n", 1)[1])
    assert install_sm6.patch_vkd3d_makefile(out) == out
    with pytest.raises(StackError, match="EXTRADEFS"):
        install_sm6.patch_vkd3d_makefile("EXTLIB = x\n")


def test_apply_patches_on_a_source_tree(tmp_path):
    (tmp_path / "libs/vkd3d/libs/vkd3d").mkdir(parents=True)
    (tmp_path / "libs/vkd3d/libs/vkd3d/device.c").write_text(DEVICE_C)
    (tmp_path / "libs/vkd3d/Makefile.in").write_text(MAKEFILE_IN)
    assert install_sm6.apply_patches(tmp_path) == ["libs/vkd3d/libs/vkd3d/device.c", "libs/vkd3d/Makefile.in"]
    assert install_sm6.apply_patches(tmp_path) == []                       # nothing left to change
    with pytest.raises(StackError, match="not found"):
        install_sm6.apply_patches(tmp_path / "elsewhere")


def test_svg_links_from_debian_rules():
    rules = ("override_dh_auto_configure:\n\t./tools/make_unicode\n"
             "\tln -sf /usr/share/misc/config.sub tools\n"
             "\tln -sf ../../dlls/user32/resources/oic_hand.svg dlls/display.drv16/oic_hand.svg\n"
             "\tln -sf ../../dlls/shell32/resources/move.svg dlls/comctl32/idi_dragarrow.svg\n")
    assert install_sm6.svg_links(rules) == [
        ["ln", "-sf", "../../dlls/user32/resources/oic_hand.svg", "dlls/display.drv16/oic_hand.svg"],
        ["ln", "-sf", "../../dlls/shell32/resources/move.svg", "dlls/comctl32/idi_dragarrow.svg"]]


@pytest.mark.parametrize("options,name", [(None, "wine8-sm51"), ({}, "wine8-sm51"),
                                          ({"stack": "wine10-sm6"}, "wine10-sm6"),
                                          ({"stack": " wine8-sm51 "}, "wine8-sm51"),
                                          ({"directml": "1.15.4"}, "wine8-sm51")])
def test_stack_option(options, name):
    assert select.stack_name(options) == name


def test_unknown_stack_is_one_line():
    with pytest.raises(StackError, match=r"stack=wine9: no such DirectML stack \(one of wine8-sm51, wine10-sm6\)"):
        select.stack_name({"stack": "wine9"})
    assert "stack" in select.SELECT_KEYS


def _info(cache: Path, **kw) -> StackInfo:
    d = dict(cache_dir=cache, node_exe=cache / "node.exe", ort_dir=cache / "app/onnxruntime-node",
             ort_common_dir=cache / "app/onnxruntime-common", prefix=cache / "prefix", mesa_root=cache / "mesa",
             icd_json=cache / "icd.json", lib_dirs=[], wine="wine", wineserver="wineserver", xvfb=None,
             versions={"onnxruntime-node": "1.30.0", "DirectML.dll": "1.15.4.0", "onnxruntime.dll": "1.30.0.909",
                       "wine": "wine-8.0 (Debian 8.0~repack-4)", "vkd3d": "1.6"})
    d.update(kw)
    return StackInfo(**d)


@pytest.fixture()
def two_stacks(tmp_path, monkeypatch):
    base = _info(tmp_path)
    sdir = stackinfo.stack_dir(tmp_path)
    sm6 = _info(sdir, prefix=sdir / "prefix", wine=str(sdir / "bin/wine"), name=stackinfo.SM6,
                launcher=str(sdir / "bin/enter"), versions={**base.versions, "wine": "wine-10.0 (Debian 10.0~repack-6)",
                                                             "vkd3d": "1.14", "shader_model": "6.0"})
    monkeypatch.setattr(select, "find_stack", lambda cache_dir=None: base)
    monkeypatch.setattr(select, "default_cache_dir", lambda: tmp_path)
    state = {"sm6": sm6}
    monkeypatch.setattr(select, "find_named", lambda cache, name=stackinfo.SM6: state["sm6"])
    info = {"kind": "onnxruntime-node", "version": "1.20.1", "ort_dir": str(tmp_path / "v/onnxruntime-node"),
            "ort_common_dir": str(tmp_path / "v/onnxruntime-common"),
            "versions": {"onnxruntime-node": "1.20.1", "DirectML.dll": "1.15.2.0", "onnxruntime.dll": "1.20.1.1"}}
    (tmp_path / stackinfo.ORT_NODE_VARIANTS / "1.20.1").mkdir(parents=True)
    (tmp_path / stackinfo.ORT_NODE_VARIANTS / "1.20.1" / stackinfo.VARIANT_INFO).write_text(json.dumps(info))
    return base, sm6, state


def test_select_stack_picks_the_named_stack(two_stacks):
    base, sm6, _ = two_stacks
    assert select.select_stack({}) is base
    assert select.select_stack({"stack": "wine8-sm51"}) is base
    assert select.select_stack({"stack": "wine10-sm6"}) is sm6
    assert select.select_stack({"stack": "wine10-sm6", "directml": "1.15.4"}, need_ort=True) is sm6
    # another onnxruntime-node build on the wine10 stack: its DLLs, the stack's Wine and prefix
    v = select.select_stack({"stack": "wine10-sm6", "onnxruntime_node": "1.20.1"}, need_ort=True)
    assert v.versions["DirectML.dll"] == "1.15.2.0" and v.versions["wine"].startswith("wine-10.0")
    assert v.launcher == sm6.launcher and v.prefix == sm6.prefix and v.stack_name == "wine10-sm6"


def test_select_stack_not_installed_names_the_setup_command(two_stacks):
    _, _, state = two_stacks
    state["sm6"] = None
    with pytest.raises(StackError, match=r"wine10-sm6 is not installed: run `onnx-dml-bench setup dml --stack wine10-sm6`"):
        select.select_stack({"stack": "wine10-sm6"})


def test_identity_in_records(two_stacks):
    base, sm6, _ = two_stacks
    assert probe.identity(base, "5.1") == {"dml_stack": "wine8-sm51", "shader_model": "5.1",
                                           "wine": "wine-8.0 (Debian 8.0~repack-4)", "vkd3d": "1.6"}
    assert probe.identity(sm6, None)["shader_model"] == "6.0"          # the manifest's measured value
    assert probe.identity(sm6, None)["dml_stack"] == "wine10-sm6"


def test_old_manifests_read_as_the_default_stack(tmp_path):
    d = _info(tmp_path).to_json()
    for k in ("name", "launcher"):
        d.pop(k)
    back = StackInfo.from_json(d)
    assert back.name == "" and back.launcher == "" and back.stack_name == "wine8-sm51"
    sm6 = _info(tmp_path, name="wine10-sm6", launcher="/x/bin/enter")
    assert StackInfo.from_json(sm6.to_json()).launcher == "/x/bin/enter"


def test_shader_model_cached_in_the_manifest(tmp_path):
    info = _info(tmp_path)
    info.manifest_path.write_text(json.dumps({"schema": 1, "stack": info.to_json()}))
    probe.record_shader_model(info, "6.0")
    assert json.loads(info.manifest_path.read_text())["stack"]["versions"]["shader_model"] == "6.0"
    info.versions["shader_model"] = "6.0"
    assert probe.shader_model(info) == "6.0"                          # no harness started


def test_launchers_bind_the_cache_and_the_folders_named_at_each_use(tmp_path):
    sdir = tmp_path / "stacks/wine10-sm6"
    out = install_sm6.write_launchers(sdir, Path("/srv/odb-cache"))
    enter = out["enter"].read_text()
    assert "unshare --mount --propagation private" in enter and 'chroot "$R"' in enter
    assert " /srv/odb-cache " in enter
    assert "mount --bind /tmp" in enter
    # the checkout's own folder is not baked in (a CI clone elsewhere uses the same stack) ...
    pkg = Path(onnx_dml_bench.dml.__file__).resolve().parent
    assert str(pkg) not in enter
    assert f"${root.BINDS_ENV}" in enter
    assert (sdir / "root/srv/odb-cache").is_dir()                       # the mount point in the root
    wine = out["wine"].read_text()
    assert "WINELOADER=/usr/lib/wine/wine64" in wine and str(out["enter"]) in wine
    assert all(p.stat().st_mode & 0o111 for p in out.values())


def test_runtime_binds_name_this_checkout_and_skip_what_is_bound_already(monkeypatch):
    pkg = Path(onnx_dml_bench.dml.__file__).resolve().parent
    monkeypatch.delenv("ONNX_DML_BENCH_CACHE", raising=False)
    got = root.runtime_binds(Path("/srv/odb-cache"))
    assert pkg in got or str(pkg).startswith("/tmp/")
    assert all(p != Path("/tmp") and Path("/tmp") not in p.parents for p in got)
    assert root.runtime_binds(pkg.parent) == [p for p in got if pkg.parent not in p.parents and p != pkg.parent]
    monkeypatch.setenv("ONNX_DML_BENCH_CACHE", "/srv/other-cache")
    assert Path("/srv/other-cache") in root.runtime_binds(Path("/srv/odb-cache"))


def test_find_refreshes_old_launchers_and_names_the_binds(tmp_path, monkeypatch):
    """A stack set up from another checkout (older launcher text, another package folder baked in)
    is brought up to this code's launchers, and its environment names this checkout's folder."""
    sdir = stackinfo.stack_dir(tmp_path)
    out = install_sm6.write_launchers(sdir, tmp_path)
    out["enter"].write_text("#!/bin/sh\n# old: binds /elsewhere/onnx_dml_bench/dml\n")
    info = _info(sdir, prefix=sdir / "prefix", wine=str(out["wine"]), name=stackinfo.SM6, launcher=str(out["enter"]))
    monkeypatch.setattr(select, "find_stack", lambda cache_dir=None: info)
    got = select.find_named(tmp_path)
    assert "/elsewhere" not in out["enter"].read_text() and root.BINDS_ENV in out["enter"].read_text()
    named = got.extra_env[root.BINDS_ENV].split(":")
    pkg = Path(onnx_dml_bench.dml.__file__).resolve().parent
    assert str(pkg) in named or str(pkg).startswith("/tmp/")
    assert got.env()[root.BINDS_ENV] == got.extra_env[root.BINDS_ENV]
    assert root.BINDS_ENV not in info.extra_env                       # the manifest's record unchanged
