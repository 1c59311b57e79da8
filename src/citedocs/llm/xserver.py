"""llama.cpp's server from the prebuilt `xllamacpp` wheel, started with the flags citedocs gives `llama-server`.

`citedocs model install` unpacks the pinned wheel (no compiler needed) and writes a small `llama-server`
launcher that runs this module with the wheel on its path, so `LlamaServer` starts, supervises and stops it
exactly like a built `llama-server`: `-m`, `--host`, `--port`, `--parallel`, `-c`, `-t` and `--no-repack` are
understood, `/health` and `/v1/chat/completions` answer on the port, SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    args = argparse.ArgumentParser(
        prog="llama-server (xllamacpp)", description="llama.cpp's server from the xllamacpp wheel."
    )
    args.add_argument("-m", "--model", required=True, help="the GGUF file")
    args.add_argument("--host", default="127.0.0.1")
    args.add_argument("--port", type=int, default=8080)
    args.add_argument("-np", "--parallel", type=int, default=1, help="slots (concurrent answers)")
    args.add_argument("-c", "--ctx-size", type=int, default=4096, help="context for all slots together")
    args.add_argument("-t", "--threads", type=int, default=0, help="threads (default: all cores)")
    args.add_argument("-nr", "--no-repack", action="store_true", help="do not repack weights")
    return args


def _params(options: argparse.Namespace) -> Any:
    import xllamacpp  # the unpacked wheel, put on sys.path by the launcher

    params = xllamacpp.CommonParams()
    params.model.path = options.model
    params.hostnames = [options.host]
    params.port = options.port
    params.n_parallel = max(1, options.parallel)
    params.n_ctx = options.ctx_size
    if options.threads > 0:
        params.cpuparams.n_threads = options.threads
        params.cpuparams_batch.n_threads = options.threads
    params.no_extra_bufts = bool(options.no_repack)
    return params


def main(argv: list[str] | None = None) -> int:
    options, _unknown = parser().parse_known_args(argv)  # flags of a newer citedocs are ignored, not fatal
    import xllamacpp

    stop = [signal.SIGTERM, signal.SIGINT]
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # the server's threads inherit the mask; we wait below
    server = xllamacpp.Server(_params(options))
    print(f"xllamacpp {xllamacpp.__version__} listening on {server.listening_address}", flush=True)
    signal.sigwait(stop)
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
