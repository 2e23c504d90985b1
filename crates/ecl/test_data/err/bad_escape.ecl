* {{ term = "a\b" }}
