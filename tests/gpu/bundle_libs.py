#!/usr/bin/env python3
"""Copies the shared libraries that the GPU check's binaries need into a bundle folder, and puts
link-time stubs in place of the image decoders we never use.

The GPU machine has LibTorch (its torch wheel), CUDA and the C/C++ runtime but no OpenCV. Debian's
libopencv_imgcodecs links GDAL, GDCM and OpenEXR (for GIS rasters, DICOM and EXR files), which pull
in over a hundred more libraries (poppler, HDF5, x265, ICU's 30 MB of data, ...): about 190 MiB,
three times what may travel. Crucible reads JPEG, PNG, BMP, WebP and TIFF only, so those three
decoders are never called; but imgcodecs is linked with BIND_NOW, so every symbol it takes from them
must still resolve at load time. Each of their libraries is therefore replaced by a stub with the
same SONAME that defines exactly the symbols the bundle uses from it: functions that abort with the
symbol's name (so a call would say so, never misbehave), constructors and destructors that do
nothing (imgcodecs builds a few static objects of theirs when it is loaded) and zeroed objects
of the real size.

    bundle_libs.py LIB_DIR BINARY...

Walks the NEEDED entries from the binaries (readelf), resolves them as the dynamic loader does
here (ldd), and copies every library that is not LibTorch/CUDA/the C runtime, or stubs it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Provided on the GPU machine: its torch wheel (LibTorch and the CUDA libraries as nvidia-*
# wheels) and the C/C++ runtime every Linux has.
PROVIDED = re.compile(
    r"^lib(torch|c10|caffe2|cuda|cudart|cublas|cudnn|nccl|nvrtc|nvToolsExt|nvJitLink|cusparse|cufft|"
    r"curand|cusolver|cupti|nvshmem|cufile|gomp|shm)|^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|"
    r"librt|ld-linux-x86-64)\.so")
# Decoders of formats we never read: GDAL (GIS rasters), GDCM (DICOM), OpenEXR (and its Imath,
# Iex and IlmThread). Replaced by stubs.
STUBBED = re.compile(r"^lib(gdal|gdcm[A-Za-z]*|OpenEXR[A-Za-z]*|Iex|IlmThread|Imath)[-.]")
# Itanium-mangled constructor (C1, C2, C3) or destructor (D0, D1, D2) names.
CTOR_DTOR = re.compile(r"(C[123]|D[012])E")
# Functions imgcodecs calls while it registers its decoders, before any image is read.
INIT_CALLS = {"GDALAllRegister"}


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run("readelf", "-d", path))


def resolved(path):
    """SONAME -> path as the dynamic loader finds them for `path` (its whole closure)."""
    out = {}
    for line in run("ldd", path).splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line) or re.match(r"\s*(/\S*/(ld-linux[^/\s]*))", line)
        if m:
            name, where = (m.group(1), m.group(2)) if "=>" in line else (m.group(2), m.group(1))
            out[name] = where
    return out


def dynamic_symbols(path):
    """(undefined names, {defined name: (kind, size)}) of a shared object's dynamic table."""
    undefined, defined = set(), {}
    for line in run("objdump", "-T", path).splitlines():
        # 0000000000123456 g    DF .text  0000000000000042  Base        name
        m = re.match(r"^[0-9a-f]{16} (.{7}) (\S+)\s+([0-9a-f]+)\s+(.+)$", line)
        if not m:
            continue
        flags, section, size, rest = m.groups()
        name = rest.split()[-1]
        if section == "*UND*":
            if "w" not in flags:  # a weak reference may stay unresolved
                undefined.add(name)
        elif section != "*ABS*":  # functions, objects, also indirect functions and TLS
            defined[name] = ("object" if "O" in flags else "function", int(size, 16))
    return undefined, defined


def closure(path, paths, stop):
    """`path` and the libraries it needs, transitively, less those `stop` matches."""
    out, queue = [], [path]
    while queue:
        p = queue.pop()
        if p in out:
            continue
        out.append(p)
        found = resolved(p)
        queue.extend(found[n] for n in needed(p) if n in found and not stop(n))
    return out


def write_stub(soname, symbols, lib_dir, work):
    lines = ["#include <stdio.h>", "#include <stdlib.h>",
             f'static void stubbed(const char* name) {{ fprintf(stderr, "{soname} is a stub in the '
             f'GPU bundle (a decoder Crucible never uses); %s was called\\n", name); abort(); }}']
    for i, (name, (kind, size)) in enumerate(sorted(symbols.items())):
        if kind == "object":
            lines.append(f'__attribute__((visibility("default"), aligned(16))) char object_{i}[{max(size, 1)}] '
                         f'__asm__("{name}");')
        else:
            # Constructors and destructors of the decoders' static objects run when imgcodecs is
            # loaded (an Imf::Chromaticities, say), and it registers GDAL's drivers: those do
            # nothing. Anything else aborts.
            body = "" if CTOR_DTOR.search(name) or name in INIT_CALLS else f'stubbed("{name}");'
            lines.append(f'__attribute__((visibility("default"))) void function_{i}(void) __asm__("{name}");')
            lines.append(f"void function_{i}(void) {{ {body} }}")
    source = os.path.join(work, soname + ".c")
    with open(source, "w") as f:
        f.write("\n".join(lines) + "\n")
    run("cc", "-shared", "-fPIC", "-O1", "-s", f"-Wl,-soname,{soname}", "-o",
        os.path.join(lib_dir, soname), source)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lib_dir, binaries = sys.argv[1], sys.argv[2:]
    os.makedirs(lib_dir, exist_ok=True)
    paths = {}
    for b in binaries:
        paths.update(resolved(b))
    queue = [(n, b) for b in binaries for n in needed(b)]
    kept, provided, stubs, seen = [], [], {}, set()
    while queue:
        soname, parent = queue.pop()
        if soname in seen:
            continue
        seen.add(soname)
        path = paths.get(soname) or resolved(parent).get(soname)
        if PROVIDED.match(soname):
            if path:
                provided.append(path)
            continue
        if not path:
            sys.exit(f"bundle_libs: {soname} (needed by {parent}) is not found here")
        if STUBBED.match(soname):
            stubs[soname] = path
        else:
            kept.append(path)
            queue.extend((n, path) for n in needed(path))
    # The symbols the bundle's objects need that neither the copied nor the provided libraries
    # define: each is defined by the stub whose real library (or what that one needs) had it.
    wanted, available = set(), set()
    for obj in binaries + kept:
        wanted |= dynamic_symbols(obj)[0]
    for obj in kept + provided:
        available |= dynamic_symbols(obj)[1].keys()
    missing = wanted - available
    stop = lambda n: bool(PROVIDED.match(n)) or n in {os.path.basename(k) for k in kept}
    for path in kept:
        shutil.copy2(os.path.realpath(path), os.path.join(lib_dir, os.path.basename(path)))
    with tempfile.TemporaryDirectory() as work:
        for soname, path in sorted(stubs.items()):
            symbols = {}
            for lib in closure(path, paths, stop):
                for name, what in dynamic_symbols(lib)[1].items():
                    if name in missing and name not in symbols:
                        symbols[name] = what
            missing -= symbols.keys()
            write_stub(soname, symbols, lib_dir, work)
            print(f"bundle_libs: {soname} stubbed ({len(symbols)} symbols)")
    if missing:
        sys.exit(f"bundle_libs: {len(missing)} symbols are defined nowhere, e.g. {sorted(missing)[:5]}")
    print(f"bundle_libs: {len(kept)} libraries copied, {len(stubs)} stubbed")


if __name__ == "__main__":
    main()
