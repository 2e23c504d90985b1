* {{ C effectiveTime = "20201340" }}
