//! The interface engine: store-before-ACK durability, duplicate detection, routing and delivery.
