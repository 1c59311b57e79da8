from __future__ import annotations

import sys

from citedocs.mcp.transports import main

sys.exit(main())
