< 1234567 {{ M mapTarget = "x" }}
