// A build script, so that cargo unifies the features of build dependencies too.
fn main() {}
