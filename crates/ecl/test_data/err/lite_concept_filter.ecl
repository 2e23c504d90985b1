/* lite */ < 1234567 {{ C moduleId = 1234567 }}
