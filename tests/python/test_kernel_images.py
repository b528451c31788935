"""`mpbench env` lists the GPU code the binary carries, read from its own .nv_fatbin section: the
same images as NVIDIA's cuobjdump lists for the same file (the nvidia-cuda-cuobjdump wheel of
scripts/requirements.txt, or one on PATH)."""
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))


def cuobjdump():
    wheel = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    for candidate in [*wheel.glob("nvidia/cu*/bin/cuobjdump"), shutil.which("cuobjdump")]:
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def env():
    done = subprocess.run([str(BIN), "env", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def listed_by_cuobjdump(tool, binary):
    done = subprocess.run([tool, "--list-elf", "--list-ptx", str(binary)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # "ELF file    1: mpbench.1.sm_90.cubin", "PTX file    1: mpbench.1.sm_120.ptx"
    return Counter((kind, arch) for kind, arch in re.findall(r"^(ELF|PTX) file\s+\d+: \S*\.(sm_\w+)\.(?:cubin|ptx)$",
                                                             done.stdout, re.M))


def test_env_lists_the_images_cuobjdump_lists():
    images = env().get("cuda", {}).get("kernel_images")
    if images is None:
        pytest.skip("built without CUDA: the binary carries no GPU code")
    tool = cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found: pip install -r scripts/requirements.txt installs nvidia-cuda-cuobjdump")
    assert "error" not in images, images
    listed = listed_by_cuobjdump(tool, BIN)
    assert listed, "cuobjdump lists no image: nothing compared"
    # cuobjdump names PTX by its sm_ number and a family cubin without its f.
    theirs = {("sass" if kind == "ELF" else "ptx", arch.removeprefix("sm_")) for kind, arch in listed}
    ours = {("sass", name.removeprefix("sm_").removesuffix("f")) for name in images["sass"]} | \
           {("ptx", name.removeprefix("compute_")) for name in images["ptx"]}
    assert ours == theirs
    # Each image once per fatbinary: cuobjdump lists every fatbinary's images.
    assert max(listed.values()) <= images["fatbinaries"]


def test_env_text_names_the_same_images():
    images = env().get("cuda", {}).get("kernel_images")
    if images is None:
        pytest.skip("built without CUDA: the binary carries no GPU code")
    text = subprocess.run([str(BIN), "env"], capture_output=True, text=True, timeout=120, check=True).stdout
    line = next(l for l in text.splitlines() if l.startswith("gpu code"))
    assert line == f"gpu code  {' '.join(images['sass']) or 'none'} (SASS), {' '.join(images['ptx']) or 'none'} (PTX)"
