* {{ C definitionStatus = (primitive defined), definitionStatusId = 900000000000074008, moduleId != << 900000000000445007, effectiveTime != ("20190131" ""), active = * }}
