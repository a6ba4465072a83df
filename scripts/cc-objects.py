#!/usr/bin/env python3
"""scripts/cc-objects.py [--map OLD=NEW] CC ARGS... - compile and link as
`CC ARGS...` would (one command: options, .c sources, -o OUT, libraries),
one object per source, each object shared by every build whose compile of
that source is the same.

Why: a variant of the model is server-min/ with one or two files patched,
yet each was compiled whole, 25 variants and six flavours over: most of
the C build time went into objects already made.  An object is reused when
the compiler would be given the same input: the same compiler, the same
options (-D and -I aside: their effect is in the next item) and the same
preprocessed source, line markers included, so that any header, macro,
token pasting or line a patch changes makes a new object (ccache's rule;
ccache itself would see every patched copy as another file).

--map OLD=NEW: the sources and headers under OLD are a copy of NEW's
(scripts/build-variant.sh's build/<variant>/src/server-min): read as NEW
when compared, and compiled with -ffile-prefix-map=OLD=NEW, so that an
object names NEW in __FILE__ and in its debug information, whichever build
made it first, as a compile of NEW itself does.

The sources are preprocessed by one compiler command; an object is
compiled only when missing.  Objects: build/cc-objects/<key>.o (make clean
removes them), written under a temporary name and renamed, so that builds
side by side (make -j) at worst both compile one.  A failing compile or
link fails the command with the compiler's own message and status.
"""
import hashlib
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def split_args(args):
    """(sources, compile options, key options) of a cc command line."""
    srcs, copts, kopts = [], [], []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-o":
            i += 1
        elif a.startswith(("-D", "-I")):
            copts.append(a)
        elif a.startswith(("-l", "-L", "-Wl,")):
            pass
        elif a.endswith(".c"):
            srcs.append(a)
        else:
            copts.append(a)
            kopts.append(a)
        i += 1
    return srcs, copts, kopts


def preprocess(cc, copts, srcs):
    """Each source's preprocessed text, from one compiler command (its
    output is the sources' in order, each opening with a '# 0 "SRC"'
    line); one command per source if that split fails."""
    out = subprocess.run([cc, *copts, "-E", *srcs], check=True,
                         stdout=subprocess.PIPE).stdout
    heads = [b'# 0 "%s"\n' % s.encode() for s in srcs]
    pos = []
    for h in heads:
        p = out.find(h, pos[-1] + 1 if pos else 0)
        if p < 0 or (not pos and p != 0):
            break
        pos.append(p)
    if len(pos) == len(srcs):
        return [out[p:q] for p, q in zip(pos, pos[1:] + [len(out)])]
    return [subprocess.run([cc, *copts, "-E", s], check=True,
                           stdout=subprocess.PIPE).stdout for s in srcs]


def main(argv):
    old = new = None
    if argv[:1] == ["--map"] and len(argv) > 1:
        old, _, new = argv[1].partition("=")
        argv = argv[2:]
    if len(argv) < 2:
        sys.exit("usage: scripts/cc-objects.py [--map OLD=NEW] CC ARGS...")
    cc, args = argv[0], argv[1:]
    srcs, copts, kopts = split_args(args)
    if not srcs:
        sys.exit("cc-objects: no .c source in: " + " ".join(args))
    cache = os.environ.get("KIT_CC_OBJECTS", os.path.join(TOP, "build", "cc-objects"))
    os.makedirs(cache, exist_ok=True)
    ident = subprocess.run([cc, "-v"], stderr=subprocess.PIPE, check=True).stderr.splitlines()[-1]
    mapping = ["-ffile-prefix-map=%s=%s" % (old, new)] if old else []
    objs = {}
    with tempfile.TemporaryDirectory(dir=cache, prefix=".tmp.") as tmp:
        for src, text in zip(srcs, preprocess(cc, copts, srcs)):
            if old:
                text = text.replace(old.encode(), new.encode())
            h = hashlib.sha256(ident)
            # No --map in the key: the object names NEW either way.
            for o in kopts:
                h.update(o.encode() + b"\0")
            h.update(b"--\0" + text)
            obj = os.path.join(cache, h.hexdigest()[:32] + ".o")
            if not os.path.exists(obj):
                part = os.path.join(tmp, os.path.basename(obj))
                rc = subprocess.run([cc, *copts, *mapping, "-c", src, "-o", part]).returncode
                if rc:
                    sys.exit(rc)
                os.replace(part, obj)
            objs[src] = obj
    # The link: the same command with each source replaced by its object.
    sys.exit(subprocess.run([cc] + [objs.get(a, a) for a in args]).returncode)


if __name__ == "__main__":
    main(sys.argv[1:])
