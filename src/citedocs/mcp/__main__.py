from __future__ import annotations

import sys

from citedocs.blas import one_thread_from_the_start

one_thread_from_the_start()  # before numpy loads

from citedocs.mcp.transports import main  # noqa: E402

sys.exit(main())
