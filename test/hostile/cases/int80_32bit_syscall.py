# description: a 32-bit system call through `int 0x80` (the i386 ABI, a
#   classic way around a filter written for x86_64 numbers) kills the
#   process with SIGSYS: the seccomp filter kills on a non-native arch.
#   The machine code (mov eax, 20 [i386 getpid]; int 0x80; ret) runs from
#   an anonymous executable mapping made with Python's mmap and ctypes.
# runtime: python
# expect-state: FAILED
# expect-reason: SIGNAL
# expect-signal: 31
# expect-stdout-contains: calling int 0x80
# expect-stdout-not-contains: SURVIVED
import ctypes, mmap

code = bytes([0xB8, 0x14, 0x00, 0x00, 0x00,  # mov eax, 20
              0xCD, 0x80,                    # int 0x80
              0xC3])                         # ret
buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(code)
fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
print("calling int 0x80", flush=True)
print("SURVIVED: int 0x80 returned", fn())
