from loopdbg.cli import main

raise SystemExit(main())
