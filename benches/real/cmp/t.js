let s = 0; for (let i = 0; i < 1e6; i++) s += i % 7; console.log(s, JSON.stringify({a: [1, 2]}));
