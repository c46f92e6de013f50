//! Strategies and reliability profiles (paper §2.2.3, §3.6.3). (TO BE IMPLEMENTED)
pub enum Strategy { Rows, Columns, All }
pub enum Profile { Input, Output, Validator }
pub struct ProfileEntry;
