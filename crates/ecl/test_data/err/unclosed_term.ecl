< 1234567 |Clinical finding
