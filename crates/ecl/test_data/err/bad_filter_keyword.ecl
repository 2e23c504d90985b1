* {{ D colour = red }}
