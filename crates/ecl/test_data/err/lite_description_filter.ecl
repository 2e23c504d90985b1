/* lite */ < 1234567 {{ term = "x" }}
