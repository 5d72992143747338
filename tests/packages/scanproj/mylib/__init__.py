raise RuntimeError("this package must never be imported by the scanner")
