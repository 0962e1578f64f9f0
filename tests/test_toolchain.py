"""make toolchain (tools/toolchain.sh) without compiling anything: argument handling, the
P4_SOURCES check, and the resume logic (stamps keyed by the pinned versions), with every
step's command replaced by a fake (TOOLCHAIN_FAKE_STEPS=1). And the main job's
build-before-run rule (never the stand-in by accident) without p4c."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from accessnet import switches

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "toolchain.sh"
STEPS = ["deps", "sources", "pi", "bmv2", "p4c", "finish"]


def tc(*args: str, tmp: Path, fake: bool = True, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("PREFIX", "P4_SOURCES", "TOFINO", "TESTGEN", "JOBS")}
    e.update(TOOLCHAIN_WORK_DIR=str(tmp / "work"), PREFIX=str(tmp / "prefix"))
    if fake:
        e["TOOLCHAIN_FAKE_STEPS"] = "1"
    e.update(env)
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=e, timeout=120)


def lines_of(out: str, step: str) -> list[str]:
    return [ln for ln in out.splitlines() if f" {step}:" in ln]


def test_unknown_option_is_a_clear_error(tmp_path):
    r = tc("--frobnicate", tmp=tmp_path)
    assert r.returncode == 2
    assert "unknown option '--frobnicate'" in r.stderr and "--help" in r.stderr
    r = tc("--prefix", tmp=tmp_path)
    assert r.returncode == 2 and "--prefix needs a value" in r.stderr
    r = tc("--jobs", "many", tmp=tmp_path)
    assert r.returncode == 2 and "--jobs" in r.stderr


def test_help_names_steps_and_offline_layout(tmp_path):
    r = tc("--help", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    for s in STEPS:
        assert f"  {s} " in r.stdout
    for d in ("DIR/p4c", "DIR/behavioral-model", "DIR/PI", "DIR/p4runtime", "DIR/gnmi", "DIR/uthash",
              "DIR/googletest", "--dry-run", "--status", "TOFINO=1", "DIR/protobuf", "DIR/abseil-cpp", "DIR/spdlog",
              "bf-p4c", "v1.2.5.16"):
        assert d in r.stdout
    assert "  tofino " in r.stdout and "TOFINO=1 only" in r.stdout
    assert not (tmp_path / "work").exists()


def test_dry_run_lists_every_step_and_builds_nothing(tmp_path):
    r = tc("--dry-run", tmp=tmp_path, fake=False)
    assert r.returncode == 0, r.stderr
    for i, s in enumerate(STEPS, 1):
        assert f"{i}/6 {s}: would run" in r.stdout
    assert "./configure --prefix=" in r.stdout and "--with-pi --with-thrift --disable-logging-macros --disable-elogger" in r.stdout
    assert "-DFETCHCONTENT_SOURCE_DIR_P4RUNTIME=" in r.stdout and "v1.2.4.8" in r.stdout
    assert not (tmp_path / "work").exists() and not (tmp_path / "prefix").exists()


def test_p4_sources_missing_dir_or_checkouts(tmp_path):
    r = tc("--dry-run", tmp=tmp_path, P4_SOURCES=str(tmp_path / "nowhere"))
    assert r.returncode == 2
    assert f"P4_SOURCES={tmp_path / 'nowhere'}: no such directory" in r.stderr
    src = tmp_path / "src"
    subprocess.run(["git", "init", "-q", str(src / "p4c")], check=True)
    (src / "PI").mkdir()  # a directory but not a git checkout
    r = tc("--dry-run", tmp=tmp_path, P4_SOURCES=str(src))
    assert r.returncode == 2
    for name in ("behavioral-model", "PI", "p4runtime", "gnmi", "uthash", "googletest"):
        assert f"{src / name} (a git checkout of" in r.stderr
    assert f"{src / 'p4c'} " not in r.stderr


def test_refuses_work_dir_inside_repo_and_bad_tofino(tmp_path):
    r = tc("--dry-run", "--work-dir", str(ROOT / "build" / "tc"), tmp=tmp_path)
    assert r.returncode == 2 and "inside the repository" in r.stderr
    r = tc("--dry-run", tmp=tmp_path, TOFINO="yes")
    assert r.returncode == 2 and "TOFINO=yes: want 1" in r.stderr


# --- TOFINO=1: the open-source Tofino backend (bf-p4c), a seventh step ------------------------

def test_tofino_dry_run_adds_the_step(tmp_path):
    r = tc("--dry-run", tmp=tmp_path, fake=False)
    assert "7/7" not in r.stdout and "TOFINO=1 would add step tofino" in r.stdout
    r = tc("--dry-run", tmp=tmp_path, fake=False, TOFINO="1")
    assert r.returncode == 0, r.stderr
    for i, s in enumerate(STEPS + ["tofino"], 1):
        assert f"{i}/7 {s}: would run" in r.stdout
    cmds = "\n".join(lines_of(r.stdout, "tofino")) + r.stdout.split("7/7 tofino:")[1]
    for want in (f"-DCMAKE_INSTALL_PREFIX={tmp_path / 'prefix' / 'tofino'} ", "-DENABLE_TOFINO=ON",
                 "-DP4C_DRIVER_NAME=bf-p4c", "-DENABLE_BMV2=OFF", "-DUSE_PREINSTALLED_Z3=ON",
                 f"-DFETCHCONTENT_SOURCE_DIR_PROTOBUF={tmp_path / 'work' / 'src' / 'protobuf'}",
                 f"-DFETCHCONTENT_SOURCE_DIR_ABSEIL={tmp_path / 'work' / 'src' / 'abseil-cpp'}",
                 "-DFETCHCONTENT_SOURCE_DIR_P4RUNTIME=", "v1.2.5.16", "tools/p4c-tofino.patch",
                 "third_party/spdlog", "pyinstaller==", "--target tofino --arch tna",
                 "--target tofino2 --arch t2na"):
        assert want in cmds, want
    assert not (tmp_path / "work").exists() and not (tmp_path / "prefix").exists()


def test_tofino_fake_build_is_stamped_and_resumable(tmp_path):
    r = tc(tmp=tmp_path)  # the toolchain without TOFINO first
    assert r.returncode == 0 and "7/7" not in r.stdout, r.stdout + r.stderr
    assert not (tmp_path / "work" / "stamps" / "tofino").exists()
    r = tc(tmp=tmp_path, TOFINO="1")  # then only the new step runs
    assert r.returncode == 0, r.stdout + r.stderr
    assert {s for s in STEPS if any("already done" in ln for ln in lines_of(r.stdout, s))} == set(STEPS)
    assert any("7/7 tofino: done in" in ln for ln in r.stdout.splitlines()), r.stdout
    assert (tmp_path / "prefix" / "tofino" / "bin" / "bf-p4c").exists()
    key = (tmp_path / "work" / "stamps" / "tofino").read_text()
    assert key.startswith("tofino 6b7ec98e77dfc71c6e1309d9a76183cb31f35a8a ") and "patch=" in key
    assert f"prefix={tmp_path / 'prefix' / 'tofino'} " in key
    assert "bf-p4c" in r.stdout.splitlines()[-2] + r.stdout.splitlines()[-1]
    r = tc(tmp=tmp_path, TOFINO="1")
    assert r.returncode == 0 and "7/7 tofino: already done" in r.stdout
    st = tc("--status", tmp=tmp_path, TOFINO="1")
    assert "7/7 tofino: done" in st.stdout
    # a failing tofino step leaves the rest of the toolchain done
    versions = tmp_path / "toolchain.versions"
    pin = "PROTOBUF_COMMIT=4a2aef570deb2bfb8927426558701e8bfc26f2a4"
    versions.write_text((ROOT / "tools" / "toolchain.versions").read_text().replace(pin, "PROTOBUF_COMMIT=" + "b" * 40))
    r = tc(tmp=tmp_path, TOFINO="1", TOOLCHAIN_VERSIONS=str(versions), TOOLCHAIN_FAKE_FAIL="tofino")
    assert r.returncode == 1 and "7/7 tofino: FAILED" in r.stderr
    # another pin: finish records the pins again (make doctor compares them), the rest is kept
    assert any("6/7 finish: done in" in ln for ln in r.stdout.splitlines()), r.stdout
    assert {s for s in STEPS if any("already done" in ln for ln in lines_of(r.stdout, s))} == set(STEPS) - {"finish"}
    r = tc(tmp=tmp_path, TOFINO="1", TOOLCHAIN_VERSIONS=str(versions))
    assert r.returncode == 0 and "7/7 tofino: done in" in r.stdout and "6/7 finish: already done" in r.stdout


def test_tofino_p4_sources_needs_its_checkouts(tmp_path):
    src = tmp_path / "src"
    for name in ("p4c", "behavioral-model", "PI", "p4runtime", "gnmi", "uthash", "googletest", "protobuf"):
        subprocess.run(["git", "init", "-q", str(src / name)], check=True)
    assert tc("--dry-run", tmp=tmp_path, P4_SOURCES=str(src)).returncode == 0
    r = tc("--dry-run", tmp=tmp_path, P4_SOURCES=str(src), TOFINO="1")
    assert r.returncode == 2
    assert f"{src / 'abseil-cpp'} (a git checkout of https://github.com/abseil/abseil-cpp.git)" in r.stderr
    assert f"{src / 'spdlog'} (a git checkout of https://github.com/gabime/spdlog.git)" in r.stderr
    assert f"{src / 'protobuf'} " not in r.stderr


def test_tofino_patch_names_the_three_fixes():
    patch = (ROOT / "tools" / "p4c-tofino.patch").read_text()
    files = [ln[len("+++ b/"):] for ln in patch.splitlines() if ln.startswith("+++ b/")]
    assert sorted(files) == ["backends/tofino/bf-p4c/driver/barefoot.py", "cmake/Z3.cmake", "ir/visitor.cpp"]
    assert 'set(Z3_MIN_VERSION "4.8.12")' in patch and "const flow_join_points_t::value_type &el" in patch


def test_p4env_puts_tofino_bin_on_path_when_present(tmp_path):
    def path_after(prefix: Path) -> list[str]:
        out = subprocess.run(["sh", "-c", f". {ROOT / 'tools' / 'p4env.sh'}; echo \"$PATH\""], capture_output=True,
                             text=True, env={"PATH": "/usr/bin:/bin", "P4_PREFIX": str(prefix)}, check=True)
        return out.stdout.strip().split(":")
    assert path_after(tmp_path) == ["/usr/bin", "/bin", str(tmp_path / "bin")]
    (tmp_path / "tofino" / "bin").mkdir(parents=True)
    assert path_after(tmp_path) == ["/usr/bin", "/bin", str(tmp_path / "bin"), str(tmp_path / "tofino" / "bin")]


def test_resume_skips_done_steps_and_redoes_stale_ones(tmp_path):
    r = tc(tmp=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    for s in STEPS:
        assert any("done in" in ln for ln in lines_of(r.stdout, s)), r.stdout
        assert (tmp_path / "work" / "logs" / f"{s}.log").exists()
    assert len((tmp_path / "work" / "times.tsv").read_text().splitlines()) == 6
    # a second run does nothing
    r = tc(tmp=tmp_path)
    assert r.returncode == 0
    for s in STEPS:
        assert any("already done" in ln for ln in lines_of(r.stdout, s)), r.stdout
    st = tc("--status", tmp=tmp_path)
    assert st.returncode == 0 and all(f"{s}: done" in st.stdout for s in STEPS)
    # another pinned p4c: sources, p4c and finish are redone, PI and BMv2 are not
    versions = tmp_path / "toolchain.versions"
    versions.write_text((ROOT / "tools" / "toolchain.versions").read_text()
                        .replace("P4C_COMMIT=32893b7e879db9e1c368d3568d41cb3d20c034d0", "P4C_COMMIT=" + "a" * 40))
    st = tc("--status", tmp=tmp_path, TOOLCHAIN_VERSIONS=str(versions))
    assert "p4c: stale" in st.stdout and "pi: done" in st.stdout
    r = tc(tmp=tmp_path, TOOLCHAIN_VERSIONS=str(versions))
    assert r.returncode == 0, r.stderr
    redone = {s for s in STEPS if any("done in" in ln for ln in lines_of(r.stdout, s))}
    assert redone == {"sources", "p4c", "finish"}, r.stdout
    assert "stamp is for other pinned versions" in r.stdout
    # a step whose product left the prefix is redone even with a good stamp
    (tmp_path / "prefix" / "bin" / "simple_switch_grpc").unlink()
    r = tc(tmp=tmp_path, TOOLCHAIN_VERSIONS=str(versions))
    assert {s for s in STEPS if any("done in" in ln for ln in lines_of(r.stdout, s))} == {"bmv2"}, r.stdout


def test_failure_shows_log_tail_and_resume_continues(tmp_path):
    r = tc(tmp=tmp_path, TOOLCHAIN_FAKE_FAIL="bmv2")
    assert r.returncode == 1
    assert "4/6 bmv2: FAILED" in r.stderr and "What to do" in r.stderr
    assert "fake bmv2 log line 40" in r.stderr and "fake bmv2 log line 5\n" not in r.stderr  # the last ~30 lines
    stamps = tmp_path / "work" / "stamps"
    assert (stamps / "pi").exists() and not (stamps / "bmv2").exists() and not (stamps / "p4c").exists()
    r = tc(tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert {s for s in STEPS if any("already done" in ln for ln in lines_of(r.stdout, s))} == {"deps", "sources", "pi"}


def test_pinned_versions_for_meta_json(tmp_path, monkeypatch):
    monkeypatch.setenv("P4_PREFIX", str(tmp_path))
    v = switches.pinned_versions()
    assert v["p4c_pin"].startswith("v1.2.4.8 ") and v["bmv2_pin"].startswith("1.15.5 ")
    assert "not built by make toolchain" in v["toolchain_build"]
    (tmp_path / "share" / "iwlab").mkdir(parents=True)
    (tmp_path / "share" / "iwlab" / "toolchain.versions").write_text(switches.PINS_FILE.read_text())
    assert switches.pinned_versions()["toolchain_build"] == "make toolchain, these pins"


def test_meta_json_names_the_commit_a_replication_ran(tmp_path, monkeypatch):
    from accessnet import replication
    head = subprocess.run(["git", "-C", str(replication.ROOT), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode:
        pytest.skip(f"not a git clone: {head.stderr.strip()}")
    assert replication.source_version().split("+")[0] == head.stdout.strip()
    monkeypatch.setattr(replication, "ROOT", tmp_path)  # no clone here
    assert replication.source_version() == "unknown"


# --- never the stand-in by accident -----------------------------------------------------------

def p4tree(tmp: Path) -> Path:
    (tmp / "p4src" / "include").mkdir(parents=True)
    (tmp / "p4src" / "bottleneck.p4").write_text("// main\n")
    (tmp / "p4src" / "include" / "aqm.p4").write_text("// aqm\n")
    return tmp


def test_stale_build_detection(tmp_path):
    root = p4tree(tmp_path)
    assert switches.p4_build_stale(root) == "build/bottleneck.json is missing"
    (root / "build").mkdir()
    out = root / "build" / "bottleneck.json"
    out.write_text("{}")
    now = time.time()
    os.utime(out, (now, now))
    for p in (root / "p4src").rglob("*.p4"):
        os.utime(p, (now - 60, now - 60))
    assert switches.p4_build_stale(root) is None
    os.utime(root / "p4src" / "include" / "aqm.p4", (now + 5, now + 5))
    assert switches.p4_build_stale(root) == "build/bottleneck.json is older than p4src/include/aqm.p4"


def test_ensure_p4_build_compiles_only_when_needed(tmp_path, monkeypatch):
    root = p4tree(tmp_path)
    calls = []

    def fake_make(argv, rc=0):
        calls.append(argv)
        (root / "build").mkdir(exist_ok=True)
        (root / "build" / "bottleneck.json").write_text("{}")
        return SimpleNamespace(returncode=rc)

    monkeypatch.setattr(switches, "find_p4_tool", lambda name: None)
    assert switches.ensure_p4_build(root, run=fake_make) == "no-toolchain" and calls == []
    monkeypatch.setattr(switches, "find_p4_tool", lambda name: f"/opt/p4/bin/{name}")
    assert switches.ensure_p4_build(root, run=fake_make) == "compiled"
    assert calls == [["make", "-C", str(root), "build"]]
    assert switches.ensure_p4_build(root, run=fake_make) == "up-to-date" and len(calls) == 1
    later = time.time() + 10
    os.utime(root / "p4src" / "bottleneck.p4", (later, later))
    with pytest.raises(RuntimeError, match="make build"):
        switches.ensure_p4_build(root, run=lambda argv: fake_make(argv, rc=2))


# --- TESTGEN=1: P4Testgen with its Tofino target, an eighth step --------------------------------

def test_testgen_needs_tofino_and_adds_the_last_step(tmp_path):
    r = tc("--dry-run", tmp=tmp_path, fake=False, TESTGEN="1")
    assert r.returncode == 2 and "TESTGEN=1 needs TOFINO=1" in r.stderr
    r = tc("--dry-run", tmp=tmp_path, fake=False, TOFINO="1")
    assert "TESTGEN=1 would add step testgen" in r.stdout and "8/8" not in r.stdout
    r = tc("--dry-run", tmp=tmp_path, fake=False, TOFINO="1", TESTGEN="1")
    assert r.returncode == 0, r.stderr
    assert "7/8 tofino: would run" in r.stdout and "8/8 testgen: would run" in r.stdout
    cmds = r.stdout.split("8/8 testgen:")[1]
    for want in ("https://github.com/pantor/inja.git @ 3741c73ba78babd2ed88f2acf2fcd6dafdb878e8",
                 "-DENABLE_TEST_TOOLS=ON", "-DENABLE_TOOLS_TARGET_TOFINO=ON", "-DENABLE_TOOLS_TARGET_BMV2=OFF",
                 f"-DFETCHCONTENT_SOURCE_DIR_INJA={tmp_path / 'work' / 'src' / 'inja'}",
                 "-DENABLE_TOFINO=ON", "make -j2 p4testgen", f"{tmp_path / 'prefix' / 'tofino' / 'bin' / 'p4testgen'}"):
        assert want in cmds, want
    r = tc("--dry-run", tmp=tmp_path, fake=False, TOFINO="1", TESTGEN="maybe")
    assert r.returncode == 2 and "TESTGEN=maybe: want 1" in r.stderr


def test_testgen_fake_build_is_stamped_after_tofino_and_its_sources_are_checked(tmp_path):
    r = tc(tmp=tmp_path, TOFINO="1")
    assert r.returncode == 0, r.stdout + r.stderr
    r = tc(tmp=tmp_path, TOFINO="1", TESTGEN="1")  # only the new step runs
    assert r.returncode == 0, r.stdout + r.stderr
    assert "7/8 tofino: already done" in r.stdout and any("8/8 testgen: done in" in ln for ln in r.stdout.splitlines())
    assert (tmp_path / "prefix" / "tofino" / "bin" / "p4testgen").exists()
    key = (tmp_path / "work" / "stamps" / "testgen").read_text()
    assert key.startswith("testgen 3741c73ba78babd2ed88f2acf2fcd6dafdb878e8 ") and "[tofino 6b7ec98e" in key
    assert "p4testgen" in r.stdout.splitlines()[-2] + r.stdout.splitlines()[-1]
    src = tmp_path / "src"
    for name in ("p4c", "behavioral-model", "PI", "p4runtime", "gnmi", "uthash", "googletest", "protobuf",
                 "abseil-cpp", "spdlog"):
        subprocess.run(["git", "init", "-q", str(src / name)], check=True)
    assert tc("--dry-run", tmp=tmp_path, P4_SOURCES=str(src), TOFINO="1").returncode == 0
    r = tc("--dry-run", tmp=tmp_path, P4_SOURCES=str(src), TOFINO="1", TESTGEN="1")
    assert r.returncode == 2 and f"{src / 'inja'} (a git checkout of https://github.com/pantor/inja.git)" in r.stderr
