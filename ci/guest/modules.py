#!/usr/bin/env python3
"""Kernel-module helper for the guest initramfs, with no kmod on the host.

usage:
  modules.py closure MODDIR NAME...   the NAMEs and everything they depend on, in load order, one
                                      path relative to MODDIR per line
  modules.py depmod MODDIR NAME...    modules.dep lines (depmod's format, paths without the
                                      compression suffix) for the NAMEs and their dependencies
  modules.py info FILE                every key=value of FILE's .modinfo section

A module's dependencies come from its own .modinfo "depends=" entry (what depmod reads too). A
module built into the kernel (listed in MODDIR/modules.builtin) needs no file and is left out;
NAME? asks for NAME only if the kernel has it as a module.
Modules may be plain or compressed with xz, gzip or zstd.
"""
import gzip
import lzma
import os
import struct
import subprocess
import sys


def module_bytes(path):
    """The uncompressed ELF image of a .ko, .ko.xz, .ko.gz or .ko.zst file."""
    with open(path, 'rb') as f:
        data = f.read()
    if path.endswith('.xz'):
        return lzma.decompress(data)
    if path.endswith('.gz'):
        return gzip.decompress(data)
    if path.endswith('.zst'):
        return subprocess.run(['zstd', '-qdc', path], capture_output=True, check=True).stdout
    return data


def modinfo(path):
    """The (key, value) pairs of the module's .modinfo section, in file order."""
    elf = module_bytes(path)
    if elf[:4] != b'\x7fELF' or elf[4] != 2:
        raise SystemExit(f'{path}: not a 64-bit ELF module')
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3A)
    sections = [struct.unpack_from('<IIQQQQ', elf, shoff + i * shentsize) for i in range(shnum)]
    names_off = sections[shstrndx][4]
    for name, _type, _flags, _addr, off, size in sections:
        end = elf.index(b'\0', names_off + name)
        if elf[names_off + name:end] == b'.modinfo':
            pairs = []
            for entry in elf[off:off + size].split(b'\0'):
                key, sep, value = entry.decode(errors='replace').partition('=')
                if sep:
                    pairs.append((key, value))
            return pairs
    return []


def canonical(name):
    """Module names treat '-' and '_' alike."""
    return name.replace('-', '_')


def index(moddir):
    """Module name -> path of its file under moddir."""
    found = {}
    for root, _dirs, files in os.walk(moddir):
        for f in files:
            if '.ko' in f:
                found[canonical(f.split('.ko')[0])] = os.path.join(root, f)
    return found


def builtin(moddir):
    """Names of the modules built into the kernel (its modules.builtin), empty if not listed."""
    try:
        with open(os.path.join(moddir, 'modules.builtin')) as f:
            return {canonical(os.path.basename(line.strip()).split('.ko')[0]) for line in f if line.strip()}
    except FileNotFoundError:
        return set()


def closure(moddir, names):
    """Paths (relative to moddir) of names and their dependencies, dependencies first; a module
    built into the kernel needs no file and is left out."""
    mods = index(moddir)
    built_in = builtin(moddir)
    order, seen = [], set()

    def visit(name):
        name = canonical(name)
        if name in seen:
            return
        seen.add(name)
        if name not in mods and name in built_in:
            return
        if name not in mods:
            raise SystemExit(f'module {name} not found under {moddir} (nor in its modules.builtin)')
        for key, value in modinfo(mods[name]):
            if key == 'depends' and value:
                for dep in value.split(','):
                    visit(dep)
        order.append(os.path.relpath(mods[name], moddir))

    for n in names:
        # NAME? asks for NAME only if the kernel has it as a module (built in, or listed in no
        # modules.builtin, the guest has it or does without).
        if n.endswith('?'):
            if canonical(n[:-1]) in mods:
                visit(n[:-1])
            continue
        visit(n)
    return order


def strip_compression(path):
    """kernel/x/y.ko.xz -> kernel/x/y.ko: the initramfs holds modules uncompressed."""
    return path[:path.index('.ko') + 3]


def depmod_lines(moddir, names):
    """One modules.dep line per module of the closure: 'mod.ko: deps...', deps in the order depmod
    writes them (a module's own dependencies before theirs, so loading runs from the end)."""
    lines = []
    for rel in closure(moddir, names):
        name = os.path.basename(rel).split('.ko')[0]
        deps = [d for d in closure(moddir, [name]) if d != rel]
        lines.append(strip_compression(rel) + ':' + ''.join(' ' + strip_compression(d) for d in reversed(deps)))
    return lines


def main(argv):
    if len(argv) >= 3 and argv[0] == 'closure':
        print('\n'.join(closure(argv[1], argv[2:])))
    elif len(argv) >= 3 and argv[0] == 'depmod':
        print('\n'.join(depmod_lines(argv[1], argv[2:])))
    elif len(argv) == 2 and argv[0] == 'info':
        for key, value in modinfo(argv[1]):
            print(f'{key}={value}')
    else:
        raise SystemExit(__doc__)


if __name__ == '__main__':
    main(sys.argv[1:])
