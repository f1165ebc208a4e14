fn main() {
    println!("sqlgate");
}
