"""TileLang made optional, as a package that must import on machines without it does:
kernels are declared with :func:`jit`, which imports nothing until a kernel is first
called, then compiles it with TileLang's own jit and keeps the result."""
import functools

try:
    import tilelang
    import tilelang.language as T
except ImportError:  # the package still imports; calling a kernel says why it cannot run
    tilelang = None
    T = None


def jit(**options):
    """A stand-in for ``@tilelang.jit(**options)`` that compiles on the first call."""

    def decorate(factory):
        compiled = {}

        @functools.wraps(factory)
        def kernel(*args, **kwargs):
            if tilelang is None:
                raise RuntimeError("this kernel needs TileLang: pip install tilelang")
            key = (args, tuple(sorted(kwargs.items())))
            if key not in compiled:
                chosen = dict(options)
                if callable(chosen.get("pass_configs")):
                    chosen["pass_configs"] = chosen["pass_configs"]()
                compiled[key] = tilelang.jit(**chosen)(factory)(*args, **kwargs)
            return compiled[key]

        kernel.jit_options = options
        return kernel

    return decorate


def device_configs():
    """Pass configs for the GPU the kernel first runs on."""
    import torch

    major, _ = torch.cuda.get_device_capability()
    return {"tl.disable_warp_specialized": major < 9}


# The name the package's older modules use.
compiled = jit
