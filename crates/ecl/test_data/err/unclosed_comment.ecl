< 1234567 /* comment
