from yeetui.cli import main

raise SystemExit(main())
