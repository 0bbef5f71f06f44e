# description: the kernel keyring is out of reach: keyctl, add_key and
#   request_key are refused, and /proc/keys is masked.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^keyctl KEYCTL_GET_KEYRING_ID: blocked EPERM$
# expect-stdout-matches: (?m)^add_key: blocked EPERM$
# expect-stdout-matches: (?m)^request_key: blocked EPERM$
# expect-stdout-contains: /proc/keys bytes: 0
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

KEY_SPEC_SESSION_KEYRING = -3
probe("keyctl KEYCTL_GET_KEYRING_ID", 250, 0, KEY_SPEC_SESSION_KEYRING, 1)
user, desc, data = ctypes.c_char_p(b"user"), ctypes.c_char_p(b"xfh"), ctypes.create_string_buffer(b"secret")
probe("add_key", 248, ctypes.cast(user, ctypes.c_void_p).value, ctypes.cast(desc, ctypes.c_void_p).value,
      ctypes.addressof(data), 6, KEY_SPEC_SESSION_KEYRING)
probe("request_key", 249, ctypes.cast(user, ctypes.c_void_p).value, ctypes.cast(desc, ctypes.c_void_p).value, 0, 0)
try:
    print("/proc/keys bytes:", len(open("/proc/keys", "rb").read()))
except OSError as e:
    print("/proc/keys bytes: 0 (", e, ")")
