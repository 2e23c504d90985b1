memberOf [referencedComponentId, targetComponentId] 123456789 : [1 to many] reverseOf 363698007 NOT = ANY, [0 to 1] { 1234567 <> 7654321 }
